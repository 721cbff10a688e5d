/**
 * The webhooks page: a webhook added with the CLI is listed; a run completes while its receiver answers 503, and
 * the page shows the delivery with its failed attempt; once the receiver is back, an operator resends it and the
 * page shows it delivered, the receiver having verified the signature; the resend is in the audit log.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { verifyWebhook } from '../lib/index';
import { expect, noChromium, test, uniqueId } from './support/test';
import { queueRun, startWorker, waybill } from './support/waybill';

test.skip(noChromium, 'no chromium');

test('shows a failed delivery and resends it', async ({ page }) => {
  const secret = 'e2e-webhook-secret-0123456789';
  let answer = 503;
  const verified: string[] = [];
  const server = createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8').on('data', (c: string) => (body += c));
    req.on('end', () => {
      if (answer === 200 && verifyWebhook(secret, String(req.headers['waybill-signature']), body))
        verified.push(String(req.headers['waybill-delivery']));
      res.writeHead(answer).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
  const added = await waybill(['webhook', 'add', url, '--event', 'run.completed', '--secret', secret]);
  const id = /added webhook (wh_[0-9a-f]+)/.exec(added)![1]!;
  const worker = await startWorker(uniqueId('e2e-hook-w'));
  try {
    const runId = uniqueId('e2e-hooked');
    await queueRun(runId, 'agent-batch', { count: 1 });
    const delivery = `${id}:run.completed:${runId}:1`;

    await page.goto('/webhooks');
    await expect(page.getByTestId(`webhook-${id}`)).toContainText(url);
    await expect(async () => {
      await page.reload();
      await expect(page.getByTestId(`delivery-${delivery}`)).toContainText('HTTP 503', { timeout: 1000 });
    }).toPass({ timeout: 60_000 });

    answer = 200;
    await page.getByTestId(`delivery-resend-${delivery}`).click();
    await expect(async () => {
      await page.reload();
      await expect(page.getByTestId(`delivery-status-${delivery}`)).toContainText('delivered', { timeout: 1000 });
    }).toPass({ timeout: 60_000 });
    expect(new Set(verified)).toEqual(new Set([delivery]));

    await page.goto('/audit');
    await expect(page.getByRole('row').filter({ hasText: delivery }).filter({ hasText: 'webhook-resend' })).toHaveCount(
      1,
    );
  } finally {
    await worker.stop();
    server.close();
  }
});

test('adds a webhook from the page, refusing a bad URL beside its field, shows its secret once, and deletes it', async ({
  page,
}) => {
  const url = `https://ops.example.com/hooks/${uniqueId('form')}`;
  await page.goto('/webhooks');
  await page.getByTestId('webhook-add-open').click();
  await page.getByTestId('webhook-field-url').fill('ftp://ops.example.com/hooks');
  await page.getByTestId('webhook-event-run.failed').check();
  await page.getByTestId('webhook-add-submit').click();
  await expect(page.getByTestId('webhook-error-url')).toHaveText('must be an http:// or https:// URL');

  await page.getByTestId('webhook-field-url').fill(url);
  await page.getByTestId('webhook-event-run.completed').check();
  await page.getByTestId('webhook-add-submit').click();
  await expect(page.getByTestId('webhook-add-message')).toHaveText(/^added webhook wh_[0-9a-f]+$/);
  const id = /(wh_[0-9a-f]+)/.exec((await page.getByTestId('webhook-add-message').textContent()) ?? '')![1]!;
  const secret = (await page.getByTestId('webhook-add-secret').textContent()) ?? '';
  expect(secret).toMatch(/^whsec_/);
  const row = page.getByTestId(`webhook-${id}`);
  await expect(row).toContainText(url);
  await expect(row).toContainText('run.failed, run.completed');
  await expect(row).toContainText(`secret …${secret.slice(-4)}`);

  await page.getByTestId(`webhook-delete-${id}`).click();
  await page.getByTestId('confirm-submit').click();
  await expect(row).toHaveCount(0);
  await page.goto('/audit');
  for (const action of ['webhook-add', 'webhook-delete'])
    await expect(page.getByRole('row').filter({ hasText: id }).filter({ hasText: action })).toHaveCount(1);
});
