/**
 * Issues 23 and 27 in a browser. A queued run says what it waits for, on the runs list and its page: behind a
 * worker whose one slot another run holds, it names the worker and that run; held back by its workflow's
 * concurrency limit, it says how many runs of its key are running. A completed review-and-send (named
 * steps, an approval, no map saved) shows one set of figures everywhere: 2/2 and a full bar on its page and in
 * the list, Executed 2, Committed 2, and its chart's "2 executed".
 */

import type { RunStore, Store } from '../lib/store/contract';
import { openStore } from '../lib/store/index';
import { RunPage } from './pages/run-page';
import { RunsPage } from './pages/runs-page';
import { expect, noChromium, test, uniqueId } from './support/test';
import { databaseUrl, queueRun, readDb, startWorker, waybill } from './support/waybill';

test.skip(noChromium, 'no chromium');

async function withStore<T>(fn: (store: Store & RunStore) => Promise<T>): Promise<T> {
  const store = (await openStore(databaseUrl(), { synchronous: 'normal' })) as Store & RunStore;
  try {
    return await fn(store);
  } finally {
    await store.close();
  }
}

/** A worker's heartbeat "in an hour": live however long the pages take to load on a busy machine. */
function beatInAnHour(worker: string): Promise<void> {
  return withStore(async (store) => {
    (store as unknown as { db: { prepare(sql: string): { run(...a: unknown[]): void } } }).db
      .prepare('UPDATE workers SET heartbeat_at = ? WHERE id = ?')
      .run(Date.now() / 1000 + 3600, worker);
  });
}

test('a queued run behind a busy slot names the worker and the run that holds it', async ({ page }) => {
  const workflow = uniqueId('e2e-slot').toLowerCase();
  const worker = `${workflow}-worker`;
  const held = `${workflow}-held`;
  const behind = `${workflow}-behind`;
  await withStore(async (store) => {
    // A worker of one slot serving a workflow no other worker serves, holding one run of it.
    await store.registerWorker({ id: worker, host: 'e2e', pid: 1, slots: 1 });
    await store.publishWorkflows(worker, [
      { name: workflow, description: null, inputSchemaJson: '{}', totalSteps: 1, version: null },
    ]);
    for (const id of [held, behind]) await store.createRun({ id, workflow, inputJson: '{}', totalSteps: 1 });
    expect(
      (await store.claimRun({ workerId: worker, leaseMs: 3_600_000, workflows: [workflow], runId: held }))?.id,
    ).toBe(held);
  });
  await beatInAnHour(worker);
  const reason = `waiting for a free slot: 1 of 1 busy on worker ${worker} with run ${held}`;
  try {
    const runs = new RunsPage(page);
    await page.goto(`/?q=${encodeURIComponent(workflow)}`);
    await expect(runs.queuedReason(behind)).toHaveText(reason);
    await expect(runs.queuedReason(held)).toHaveCount(0);

    const run = new RunPage(page);
    await run.goto(behind);
    await expect(run.status).toHaveText(/queued/);
    await expect(run.queuedReason).toHaveText(`Queued: ${reason}`);
  } finally {
    await withStore(async (store) => {
      for (const id of [held, behind]) await store.actOnRun(id, 'cancel', 'e2e');
      await store.stopWorker(worker);
    });
  }
});

test("a run its workflow's concurrency limit holds back says why on the runs list and its page", async ({ page }) => {
  const workflow = uniqueId('e2e-limit').toLowerCase();
  const worker = `${workflow}-worker`;
  const [first, second] = [`${workflow}-acme-1`, `${workflow}-acme-2`];
  await withStore(async (store) => {
    // A worker of four slots serving a workflow of one run at a time per customer, holding acme's first run:
    // three slots are free, so only the limit holds the second back.
    await store.registerWorker({ id: worker, host: 'e2e', pid: 1, slots: 4 });
    await store.publishWorkflows(worker, [
      {
        name: workflow,
        description: null,
        inputSchemaJson: '{}',
        totalSteps: 1,
        version: null,
        limits: { concurrency: { limit: 1, key: 'customer' } },
      },
    ]);
    for (const id of [first, second])
      await store.createRun({ id, workflow, inputJson: '{"customer":"acme"}', totalSteps: 1 });
    expect(
      (await store.claimRun({ workerId: worker, leaseMs: 3_600_000, workflows: [workflow], runId: first }))?.id,
    ).toBe(first);
  });
  await beatInAnHour(worker);
  const reason = '1 of 1 runs for key acme are running';
  try {
    const runs = new RunsPage(page);
    await page.goto(`/?q=${encodeURIComponent(workflow)}`);
    await expect(runs.queuedReason(second)).toContainText(reason);
    await expect(runs.queuedReason(first)).toHaveCount(0);

    const run = new RunPage(page);
    await run.goto(second);
    await expect(run.status).toHaveText(/queued/);
    await expect(run.queuedReason).toContainText(reason);
  } finally {
    await withStore(async (store) => {
      for (const id of [first, second]) await store.actOnRun(id, 'cancel', 'e2e');
      await store.stopWorker(worker);
    });
  }
});

test('a completed review-and-send shows the same figures on its page, its chart and the runs list', async ({
  page,
}) => {
  const runId = uniqueId('e2e-figures');
  await queueRun(runId, 'review-and-send', { outbox: `${runId}.jsonl` });
  const worker = await startWorker(uniqueId('e2e-figures'));
  const status = () =>
    readDb((db) => (db.prepare('SELECT status FROM runs WHERE id = ?').get(runId) as { status: string }).status);
  await expect.poll(status, { timeout: 60_000 }).toBe('waiting');
  await waybill(['approve', runId]);
  await expect.poll(status, { timeout: 60_000 }).toBe('completed');
  await worker.stop();

  const run = new RunPage(page);
  await run.goto(runId);
  await expect(run.status).toHaveText(/completed/);
  await expect(run.progress).toContainText('2/2');
  expect(await run.stepsDone()).toBe(2);
  await expect(run.progress.locator('.wb-progress-fill')).toHaveAttribute('style', /width:\s*100%/);
  await expect(run.executed).toContainText('2');
  await expect(run.committedCount).toContainText('2');
  await expect(run.skipped).toContainText('0');
  await expect(run.cumulativeChart).toContainText('2 executed');
  await expect(page.getByTestId('run-progress-card')).not.toContainText('No progress saved yet');

  const runs = new RunsPage(page);
  await page.goto(`/?q=${encodeURIComponent(runId)}`);
  await expect(runs.row(runId)).toContainText('2/2');
  await expect(runs.progress(runId)).toHaveAttribute('aria-valuenow', '2');
});
