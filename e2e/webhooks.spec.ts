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
