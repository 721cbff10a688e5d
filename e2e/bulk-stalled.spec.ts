/**
 * Issue 14, items 5 and 6 in Chromium: the runs list's bulk action over every run a filter matches (counted,
 * confirmed, done on the server, one audit line per run, no other run touched), and stalled runs named: a run
 * whose owner stopped heartbeating carries the owner and its takeover time on the list and its page, the
 * banner counts it, and the Running card does not. And item 2's line on the run page: the step being retried,
 * "attempt 1 of 10 failed, next in … s", counting down, with its last error.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { RunStore, Store } from '../lib/store/contract';
import { openStore } from '../lib/store/index';
import type { SqliteStore } from '../lib/store/sqlite';
import { ConfirmDialog } from './pages/confirm-dialog';
import { RunPage } from './pages/run-page';
import { expect, noChromium, test, uniqueId } from './support/test';
import { databaseUrl, readDb, startWorker } from './support/waybill';

test.skip(noChromium, 'no chromium');

type FullStore = Store & RunStore;

async function withStore<T>(fn: (store: FullStore & Pick<SqliteStore, 'db'>) => Promise<T>): Promise<T> {
  const store = (await openStore(databaseUrl(), { synchronous: 'normal' })) as FullStore & Pick<SqliteStore, 'db'>;
  try {
    return await fn(store);
  } finally {
    await store.close();
  }
}

const statuses = (prefix: string) =>
  readDb((db) =>
    db
      .prepare(`SELECT status, count(*) AS n FROM runs WHERE id LIKE ? || '%' GROUP BY status ORDER BY status`)
      .all(prefix),
  ) as { status: string; n: number }[];
const auditCount = (prefix: string) =>
  readDb(
    (db) =>
      (
        db.prepare(`SELECT count(*) AS n FROM audit WHERE target LIKE ? || '%' AND action = 'cancel'`).get(prefix) as {
          n: number;
        }
      ).n,
  );

test('bulk cancel of every run matching the filter: counted, confirmed, exactly those runs, one audit line each', async ({
  page,
}) => {
  const prefix = uniqueId('e2e-all');
  const other = uniqueId('e2e-keep');
  await withStore(async (store) => {
    for (let i = 0; i < 60; i++)
      await store.createRun({ id: `${prefix}-${i}`, workflow: 'agent-batch', inputJson: '{"count":1}', totalSteps: 1 });
    await store.createRun({ id: other, workflow: 'agent-batch', inputJson: '{"count":1}', totalSteps: 1 });
  });
  const dialog = new ConfirmDialog(page);
  // The list shows 50 a page: "all matching" must reach the ten on the next page too.
  await page.goto(`/?q=${encodeURIComponent(prefix)}`);
  await expect(page.getByTestId('runs-table').locator('tbody tr')).toHaveCount(50);

  await page.getByTestId('bulk-all-matching').check();
  await expect(page.getByTestId('selected-count')).toHaveText('60 runs matching this filter');
  await page.getByTestId('bulk-cancel').click();
  await expect(dialog.root).toBeVisible();
  await expect(dialog.root.getByRole('heading')).toHaveText('Cancel 60 of the 60 runs matching this filter?');
  await expect(dialog.root.getByTestId('confirm-filter')).toHaveText(`filter: search "${prefix}"`);
  // Keeping them changes nothing.
  await dialog.keep.click();
  await expect(dialog.root).toHaveCount(0);
  expect(statuses(prefix)).toEqual([{ status: 'queued', n: 60 }]);

  await page.getByTestId('bulk-cancel').click();
  await dialog.confirm('e2e: wrong batch');
  await expect(page.getByTestId('bulk-message')).toHaveText('cancel: 60 matched, 60 done');
  expect(statuses(prefix)).toEqual([{ status: 'cancelled', n: 60 }]);
  expect(auditCount(prefix)).toBe(60);
  expect(
    readDb((db) => (db.prepare('SELECT status FROM runs WHERE id = ?').get(other) as { status: string }).status),
  ).toBe('queued');
});

test('a run whose owner went silent is named with its takeover time, counted by the banner and not as running', async ({
  page,
}) => {
  const worker = uniqueId('e2e-frozen-w');
  const runId = uniqueId('e2e-frozen-run');
  const workflow = `e2e-frozen-${Date.now().toString(36)}`;
  await withStore(async (store) => {
    await store.registerWorker({ id: worker, host: 'e2e', pid: 1 });
    await store.publishWorkflows(worker, [
      { name: workflow, description: null, inputSchemaJson: '{}', totalSteps: 1, version: null },
    ]);
    await store.createRun({ id: runId, workflow, inputJson: '{}', totalSteps: 1 });
    await store.claimRun({ workerId: worker, leaseMs: 600_000, workflows: [workflow], runId });
    // It froze a minute ago: its last heartbeat is that old.
    store.db.prepare('UPDATE workers SET heartbeat_at = heartbeat_at - 60 WHERE id = ?').run(worker);
  });
  const { heartbeat, lease } = readDb((db) =>
    db
      .prepare(`SELECT w.heartbeat_at AS heartbeat, r.lease_expires_at AS lease
    FROM workers w JOIN runs r ON r.owner = w.id WHERE r.id = ?`)
      .get(runId),
  ) as { heartbeat: number; lease: number };
  const iso = (s: number) => new Date(Math.round(s) * 1000).toISOString().replace('.000Z', 'Z');
  // A live peer serving the workflow: the one that will take the run over once its lease passes.
  await withStore(async (store) => {
    await store.registerWorker({ id: `${worker}-peer`, host: 'e2e', pid: 1 });
    await store.publishWorkflows(`${worker}-peer`, [
      { name: workflow, description: null, inputSchemaJson: '{}', totalSteps: 1, version: null },
    ]);
  });
  // On the list the row has no lease: the takeover is a run lease (30 s by default) after the last heartbeat.
  const listed = `owner ${worker} silent since ${iso(heartbeat)}, will be taken over at the next worker poll`;

  await page.goto(`/?q=${encodeURIComponent(runId)}`);
  await expect(page.getByTestId(`run-stalled-${runId}`)).toHaveText('stalled');
  await expect(page.getByTestId(`run-stall-${runId}`)).toHaveText(listed);
  await expect(page.getByTestId('stalled-banner')).toBeVisible();
  const silent = Number(
    (await page.getByTestId('stalled-owner-silent').getByRole('link').textContent())!.match(/^(\d+)/)![1],
  );
  expect(silent).toBeGreaterThanOrEqual(1);
  const running = readDb(
    (db) => (db.prepare(`SELECT count(*) AS n FROM runs WHERE status = 'running'`).get() as { n: number }).n,
  );
  // Counted by status, as the badges show them, with the stalled among them said beside.
  await expect(page.getByTestId('stat-running')).toContainText(String(running));
  await expect(page.getByTestId('stat-running-stalled')).toHaveText(`${silent} stalled`);

  // The run page has its lease: the takeover time it names is the lease's end. The peer beats once more first:
  // on a loaded machine the list's checks took longer than the 10 s a worker counts as live.
  await withStore((store) => store.heartbeatWorker(`${worker}-peer`));
  const run = new RunPage(page);
  await run.goto(runId);
  await expect(page.getByTestId('run-stall-reason')).toHaveText(
    `Stalled: owner ${worker} silent since ${iso(heartbeat)}, will be taken over at ${iso(lease)}`,
  );
  await withStore(async (store) => {
    await store.actOnRun(runId, 'cancel', 'e2e');
    await store.stopWorker(worker);
    await store.stopWorker(`${worker}-peer`);
  });
});

const ROOT = fileURLToPath(new URL('..', import.meta.url));

test('the run page shows the step being retried: its attempt, the next one counting down, the last error', async ({
  page,
}) => {
  const dir = mkdtempSync(join(tmpdir(), 'waybill-e2e-retry-'));
  const workflow = `e2e-flaky-${Date.now().toString(36)}`;
  const module = join(dir, 'workflows.mjs');
  writeFileSync(
    module,
    `import { defineWorkflow } from ${JSON.stringify(pathToFileURL(join(ROOT, 'lib/engine/workflow.ts')).href)};
import { z } from ${JSON.stringify(pathToFileURL(join(ROOT, 'node_modules/zod/index.js')).href)};
export const flaky = defineWorkflow({
  name: ${JSON.stringify(workflow)},
  input: z.strictObject({}),
  retry: { maxAttempts: 10, backoff: { initialMs: 90000, maxMs: 90000 } },
  async run(ctx) {
    await ctx.step('fetch', () => { throw new Error('upstream answered 503'); }, { step: 0 });
  },
});
`,
  );
  const runId = uniqueId('e2e-retrying');
  const worker = await startWorker(uniqueId('e2e-retry-worker'), { workflows: module });
  try {
    await withStore((store) => store.createRun({ id: runId, workflow, inputJson: '{}', totalSteps: 1 }));
    const run = new RunPage(page);
    await run.goto(runId);
    const line = page.getByTestId('step-in-flight-attempt');
    await expect(line).toHaveText(/^attempt 1 of 10 failed, next in \d+\.\d s$/, { timeout: 30_000 });
    await expect(page.getByTestId('step-in-flight-error')).toHaveText('last error: Error: upstream answered 503');
    const seconds = async () => Number((await line.textContent())!.match(/next in ([\d.]+) s/)![1]);
    const first = await seconds();
    expect(first).toBeGreaterThan(60);
    expect(first).toBeLessThanOrEqual(90);
    // It counts down by the browser's clock, between the page's own refreshes.
    await expect.poll(seconds, { timeout: 5_000 }).toBeLessThan(first - 1);
    // What the line reads: the failed event's columns. Its detail is the error alone, no note to parse.
    const failed = readDb((db) =>
      db
        .prepare(`SELECT detail, attempt, max_attempts AS max, retry_at AS retryAt, at FROM step_events
          WHERE run_id = ? AND outcome = 'failed'`)
        .all(runId),
    ) as { detail: string; attempt: number; max: number; retryAt: number; at: number }[];
    expect(failed).toEqual([
      {
        detail: 'Error: upstream answered 503',
        attempt: 1,
        max: 10,
        retryAt: expect.any(Number),
        at: expect.any(Number),
      },
    ]);
    expect(failed[0]!.retryAt - failed[0]!.at).toBeGreaterThan(60);
    expect(failed[0]!.retryAt - failed[0]!.at).toBeLessThanOrEqual(91);
    // The step's page says the same: attempt 1 of 10, and when the next is due.
    await page.goto(`/runs/${encodeURIComponent(runId)}/steps/0`);
    await expect(page.getByTestId('step-attempt').first().getByTestId('attempt-number')).toHaveText('1 of 10');
    await expect(page.getByTestId('attempt-retry')).toContainText('next attempt due');
  } finally {
    await worker.stop();
    await withStore((store) => store.actOnRun(runId, 'cancel', 'e2e').catch(() => undefined));
    rmSync(dir, { recursive: true, force: true });
  }
});
