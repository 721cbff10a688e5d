/**
 * Issue 14, item 5's rerun in Chromium: the runs list's "Rerun from step" over the page's selection and over
 * every run matching the filter — the count and the confirmation first, then each run it applies to rerun on
 * the server (results from the step moved to history, the state of that step put back, one audit line each),
 * and each one it does not apply to skipped and listed with its reason, left exactly as it was.
 */
import { openStore } from '../lib/store/index';
import type { SqliteStore } from '../lib/store/sqlite';
import { ConfirmDialog } from './pages/confirm-dialog';
import { expect, noChromium, test, uniqueId } from './support/test';
import { databaseUrl, readDb } from './support/waybill';

test.skip(noChromium, 'no chromium');

/** A run of `count` committed steps (runAgent's keys and prior states) in `status`, written as a worker would leave it. */
async function seed(id: string, status: string, count: number): Promise<void> {
  const store = (await openStore(databaseUrl(), { synchronous: 'normal' })) as SqliteStore;
  try {
    const now = Date.now() / 1000;
    store.db
      .prepare(`INSERT INTO runs (id, workflow, input_json, status, total_steps, attempts, created_at, updated_at)
        VALUES (?, 'agent-batch', ?, ?, ?, 1, ?, ?)`)
      .run(id, JSON.stringify({ count }), status, count, now, now);
    store.db
      .prepare(`INSERT INTO progress (run_id, step, state_json, updated_at, executed, skipped, awaited)
        VALUES (?, ?, ?, ?, ?, 0, 0)`)
      .run(id, count, JSON.stringify({ processed: count }), now, count);
    const row = store.db.prepare(`INSERT INTO committed (idem_key, run_id, result_json, committed_at, step, worker_id,
      duration_ms, source, prior_step, prior_state_json) VALUES (?, ?, ?, ?, ?, 'w1', 5, 'executed', ?, ?)`);
    for (let n = 0; n < count; n++)
      row.run(`${id}:step:${n}`, id, JSON.stringify({ n }), now, n, n, JSON.stringify({ processed: n }));
  } finally {
    await store.close();
  }
}

const facts = (id: string) =>
  readDb((db) => ({
    status: (db.prepare('SELECT status FROM runs WHERE id = ?').get(id) as { status: string }).status,
    steps: (db.prepare('SELECT step FROM committed WHERE run_id = ? ORDER BY step').all(id) as { step: number }[]).map(
      (r) => r.step,
    ),
    history: (db.prepare('SELECT count(*) AS n FROM committed_history WHERE run_id = ?').get(id) as { n: number }).n,
    progress: db.prepare('SELECT step, state_json AS state FROM progress WHERE run_id = ?').get(id),
    audit: (
      db.prepare(`SELECT detail FROM audit WHERE target = ? AND action = 'rerun' ORDER BY id`).all(id) as {
        detail: string;
      }[]
    ).map((a) => a.detail),
  }));

test('rerun from a step over the selection and over every run matching the filter: counted, confirmed, skipped with reasons', async ({
  page,
}) => {
  const prefix = uniqueId('e2e-rerun');
  const done = [0, 1, 2, 3].map((i) => `${prefix}-done-${i}`);
  const running = `${prefix}-running`;
  const short = `${prefix}-short`;
  for (const id of done) await seed(id, 'completed', 5);
  await seed(running, 'running', 5);
  await seed(short, 'completed', 2);
  const dialog = new ConfirmDialog(page);
  await page.goto(`/?q=${encodeURIComponent(prefix)}`);
  await expect(page.getByTestId('runs-table').locator('tbody tr')).toHaveCount(6);

  // The selection: two completed runs and the running one, from step 3.
  const rerun = page.getByTestId('bulk-rerun');
  await expect(rerun).toBeDisabled();
  for (const id of [done[0]!, done[1]!, running]) await page.getByTestId(`select-${id}`).check();
  await page.getByTestId('bulk-rerun-step').fill('3');
  await rerun.click();
  await expect(dialog.root.getByRole('heading')).toHaveText('Rerun 3 runs from step 3?');
  await expect(dialog.root.getByTestId('confirm-targets')).toContainText(running);
  await dialog.keep.click();
  expect(facts(done[0]!).history).toBe(0);
  await rerun.click();
  await dialog.confirm('e2e: model v2');
  await expect(page.getByTestId('bulk-message')).toContainText('rerun: 3 matched, 2 done, 1 skipped');
  await page.getByTestId('bulk-message').getByText('Details').click();
  await expect(page.getByTestId('bulk-message')).toContainText(
    `${running}: is running: rerun applies to completed, failed, cancelled, paused runs (pause it first)`,
  );
  for (const id of [done[0]!, done[1]!]) {
    expect(facts(id)).toEqual({
      status: 'queued',
      steps: [0, 1, 2],
      history: 2,
      progress: { step: 3, state: '{"processed":3}' },
      audit: [
        'bulk rerun from step 3 of 3 selected runs: rerun 1 from step 3: 2 results moved to history, state as it was at step 3; reason: e2e: model v2',
      ],
    });
  }
  const runningBefore = facts(running);
  expect(runningBefore).toMatchObject({ status: 'running', steps: [0, 1, 2, 3, 4], history: 0, audit: [] });

  // Every run matching the filter: counted by status and last step (the two queued, the running one and the
  // one of two steps do not apply), confirmed, done.
  await page.getByTestId('bulk-all-matching').check();
  await expect(page.getByTestId('selected-count')).toHaveText('6 runs matching this filter');
  await rerun.click();
  await expect(dialog.root.getByRole('heading')).toHaveText('Rerun 2 of the 6 runs matching this filter from step 3?');
  await expect(dialog.root.getByTestId('confirm-count')).toContainText('2 of the 6 runs matching this filter');
  await dialog.confirm();
  await expect(page.getByTestId('bulk-message')).toContainText('rerun: 6 matched, 2 done, 4 skipped');
  await page.getByTestId('bulk-message').getByText('Details').click();
  await expect(page.getByTestId('bulk-message')).toContainText(`${short}: step 3 is beyond its last step (1)`);
  await expect(page.getByTestId('bulk-message')).toContainText(`${done[0]}: is queued: rerun applies to`);
  for (const id of [done[2]!, done[3]!])
    expect(facts(id)).toMatchObject({ status: 'queued', steps: [0, 1, 2], history: 2 });
  expect(facts(running)).toEqual(runningBefore);
  expect(facts(short)).toMatchObject({ status: 'completed', steps: [0, 1], history: 0, audit: [] });
  // Each run rerun once in all: one audit line each, none for the skipped.
  expect(
    readDb(
      (db) =>
        (
          db.prepare(`SELECT count(*) AS n FROM audit WHERE target LIKE ? || '%' AND action = 'rerun'`).get(prefix) as {
            n: number;
          }
        ).n,
    ),
  ).toBe(4);
});
