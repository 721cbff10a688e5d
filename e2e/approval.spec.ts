/**
 * Issue 15 in a browser: a review-and-send run waits on its run page with the draft to approve; an operator
 * approves it there (the message is delivered exactly once, by the outbox's own count) or rejects it (a note
 * is asked for; nothing is delivered; the run ends `rejected`; the note is in the audit log). A viewer sees
 * the same wait read-only, with no buttons.
 */
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { readOutbox } from '../lib/engine/workflows/outbox';
import { RunPage } from './pages/run-page';
import { E2E_VIEWER_TOKEN, openSecuredStore, securedURL, signIn } from './support/secured';
import { expect, noChromium, test, uniqueId } from './support/test';
import { databaseUrl, queueRun, readDb, startWorker } from './support/waybill';

test.skip(noChromium, 'no chromium');

const outboxFile = (name: string) => join(dirname(databaseUrl().slice('file:'.length)), name);

test('approve on the run page: the drafted message is delivered exactly once', async ({ page }) => {
  const runId = uniqueId('e2e-approve');
  const outbox = `${runId}.jsonl`;
  await queueRun(runId, 'review-and-send', { outbox });
  const worker = await startWorker(uniqueId('e2e-waits'));
  const run = new RunPage(page);
  await run.goto(runId);
  await expect(run.status).toHaveText(/waiting/i, { timeout: 30_000 });
  const open = page.getByTestId('wait-open');
  await expect(open).toContainText('review');
  await expect(page.getByTestId('wait-details')).toContainText('customer@example.com');

  await page.getByTestId('wait-note').fill('reads well');
  await page.getByTestId('wait-approve').click();
  // The open wait gives way to its decided line once the page re-renders (the buttons go with it).
  await expect(page.getByTestId('wait-decided')).toContainText(/approved by /);
  await expect(page.getByTestId('wait-approve')).toHaveCount(0);
  await expect(run.status).toHaveText(/completed/i, { timeout: 30_000 });
  await expect(page.getByTestId('wait-decided')).toContainText('reads well');

  const mail = readOutbox(outboxFile(outbox));
  expect([mail.delivered, mail.duplicates, [...mail.byKey.keys()]]).toEqual([1, 0, [`${runId}:send`]]);
  await worker.stop();
});

test('reject on the run page asks for a note, sends nothing, ends the run rejected, audits the note', async ({
  page,
}) => {
  const runId = uniqueId('e2e-reject');
  const outbox = `${runId}.jsonl`;
  await queueRun(runId, 'review-and-send', { outbox });
  const worker = await startWorker(uniqueId('e2e-waits'));
  const run = new RunPage(page);
  await run.goto(runId);
  await expect(run.status).toHaveText(/waiting/i, { timeout: 30_000 });

  await page.getByTestId('wait-reject').click();
  await expect(page.getByTestId('wait-message')).toContainText(/say why/);
  await page.getByTestId('wait-note').fill('wrong tone');
  await page.getByTestId('wait-reject').click();
  await expect(run.status).toHaveText(/rejected/i, { timeout: 30_000 });
  expect(existsSync(outboxFile(outbox))).toBe(false);
  const audit = readDb((db) =>
    db.prepare("SELECT action, detail FROM audit WHERE run_id = ? AND action IN ('approve', 'reject')").all(runId),
  );
  expect(audit).toEqual([{ action: 'reject', detail: 'wrong tone' }]);
  await worker.stop();
});

test('a viewer sees the wait read-only', async ({ browser }) => {
  const store = await openSecuredStore();
  const runId = uniqueId('e2e-viewer-wait');
  try {
    await store.createRun({ id: runId, workflow: 'review-and-send', inputJson: '{}', totalSteps: 2 });
    const taken = await store.claimRun({ workerId: 'seeder', leaseMs: 60_000, workflows: ['review-and-send'], runId });
    await store.recordWait({
      runId,
      name: 'review',
      kind: 'approval',
      detailsJson: JSON.stringify({ message: 'hello there' }),
    });
    expect(await store.parkRun(runId, 'review', 'seeder', taken!.attempts)).toBe('parked');
  } finally {
    await store.close();
  }
  const context = await browser.newContext({ baseURL: securedURL });
  const page = await context.newPage();
  await signIn(page, E2E_VIEWER_TOKEN, { name: 'vera' });
  await page.goto(`${securedURL}/runs/${runId}`);
  await expect(page.getByTestId('wait-details')).toContainText('hello there');
  await expect(page.getByTestId('wait-readonly')).toBeVisible();
  await expect(page.getByTestId('wait-approve')).toHaveCount(0);
  await context.close();
});
