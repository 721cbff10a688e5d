/**
 * Issue 26, part 4 in Chromium: the run page's rerun and fork dialogs say what the steps they would redo cost
 * the last time they ran, before the operator confirms — read from the gateway's records of the run's model
 * calls — and "Keep it" leaves the run as it was. A step beyond the last is said in the dialog as the server
 * words it. The rerun's dialog also names the child runs it would let go, and the rerun lets go those.
 */
import { openStore } from '../lib/store/index';
import type { SqliteStore } from '../lib/store/sqlite';
import { ConfirmDialog } from './pages/confirm-dialog';
import { RunPage } from './pages/run-page';
import { expect, noChromium, test, uniqueId } from './support/test';
import { databaseUrl, readDb } from './support/waybill';

test.skip(noChromium, 'no chromium');

/** A completed run of three committed steps; steps 1 and 2 made a model call each ($0.30, $0.12; 30.5k tokens each). */
async function seed(id: string): Promise<void> {
  const store = (await openStore(databaseUrl(), { synchronous: 'normal' })) as SqliteStore;
  try {
    const now = Date.now() / 1000;
    store.db
      .prepare(`INSERT INTO runs (id, workflow, input_json, status, total_steps, attempts, created_at, updated_at)
        VALUES (?, 'agent-batch', '{"count":3}', 'completed', 3, 1, ?, ?)`)
      .run(id, now, now);
    for (let n = 0; n < 3; n++)
      store.db
        .prepare(`INSERT INTO committed (idem_key, run_id, result_json, committed_at, step, worker_id, duration_ms, source)
          VALUES (?, ?, '{}', ?, ?, 'w1', 5, 'executed')`)
        .run(`${id}:step:${n}`, id, now, n);
    for (const [n, cost] of [
      [1, 0.3],
      [2, 0.12],
    ] as const)
      store.db
        .prepare(`INSERT INTO model_calls (id, idem_key, sent_key, run_id, step, api, model, fingerprint, state, framing,
          input_tokens, output_tokens, cached_tokens, cost_usd, started_at, completed_at)
          VALUES (?, ?, ?, ?, ?, 'openai.chat', 'm', 'f', 'complete', 'json', 30000, 500, 0, ?, ?, ?)`)
        .run(`${id}-c${n}`, `${id}:step:${n}`, `${id}:step:${n}`, id, n, cost, now, now);
  } finally {
    await store.close();
  }
}

/**
 * A completed parent of three steps that started children a and b before step 1 and c after it: the `child:`
 * rows a ctx.startChild commits, in commit order, and the children's runs rows.
 */
async function seedParent(id: string): Promise<void> {
  const store = (await openStore(databaseUrl(), { synchronous: 'normal' })) as SqliteStore;
  try {
    const now = Date.now() / 1000;
    const run = store.db.prepare(`INSERT INTO runs (id, workflow, input_json, status, total_steps, attempts, created_at,
      updated_at, parent_run_id) VALUES (?, 'agent-batch', '{"count":1}', ?, ?, 1, ?, ?, ?)`);
    run.run(id, 'completed', 3, now, now, null);
    for (const [child, status] of [
      ['a', 'completed'],
      ['b', 'failed'],
      ['c', 'completed'],
    ] as const)
      run.run(`${id}:${child}`, status, 1, now, now, id);
    const commit =
      store.db.prepare(`INSERT INTO committed (idem_key, run_id, result_json, committed_at, step, worker_id,
      duration_ms, source) VALUES (?, ?, ?, ?, ?, 'w1', 5, 'executed')`);
    const started = (child: string) => JSON.stringify({ runId: `${id}:${child}` });
    commit.run(`${id}:step:0`, id, '{}', now - 6, 0);
    commit.run(`${id}:child:a`, id, started('a'), now - 5, null);
    commit.run(`${id}:child:b`, id, started('b'), now - 4, null);
    commit.run(`${id}:step:1`, id, '{}', now - 3, 1);
    commit.run(`${id}:child:c`, id, started('c'), now - 2, null);
    commit.run(`${id}:step:2`, id, '{}', now - 1, 2);
  } finally {
    await store.close();
  }
}

const history = (id: string) =>
  readDb(
    (db) => (db.prepare('SELECT count(*) AS n FROM committed_history WHERE run_id = ?').get(id) as { n: number }).n,
  );

test('the rerun and fork dialogs say what the steps they redo cost last time, before confirming', async ({ page }) => {
  const runId = uniqueId('e2e-cost');
  await seed(runId);
  const run = new RunPage(page);
  const dialog = new ConfirmDialog(page);
  await run.goto(runId);

  await page.getByTestId('rewind-step').fill('1');
  await page.getByTestId('action-rerun').click();
  await expect(dialog.root.getByTestId('rewind-last-cost')).toHaveText('steps 1–2 cost $0.42 and 61k tokens last time');
  await dialog.keep.click();
  expect(history(runId)).toBe(0);

  await page.getByTestId('rewind-step').fill('2');
  await page.getByTestId('action-fork').click();
  await expect(dialog.root.getByTestId('rewind-last-cost')).toHaveText('step 2 cost $0.12 and 31k tokens last time');
  await dialog.keep.click();

  await page.getByTestId('rewind-step').fill('0');
  await page.getByTestId('action-rerun').click();
  await expect(dialog.root.getByTestId('rewind-last-cost')).toHaveText('steps 0–2 cost $0.42 and 61k tokens last time');
  await dialog.keep.click();

  await page.getByTestId('rewind-step').fill('7');
  await page.getByTestId('action-rerun').click();
  await expect(dialog.root.getByTestId('rewind-last-cost')).toHaveAttribute('data-state', 'failed');
  await expect(dialog.root.getByTestId('rewind-last-cost')).toContainText(
    `fromStep 7 is beyond run ${runId}'s last step (2)`,
  );
  await dialog.keep.click();

  // Confirmed: the rerun goes ahead, and the calls it retired are still what those steps cost last time.
  await page.getByTestId('rewind-step').fill('2');
  await page.getByTestId('action-rerun').click();
  await expect(dialog.root.getByTestId('rewind-last-cost')).toHaveText('step 2 cost $0.12 and 31k tokens last time');
  await dialog.confirm();
  await expect(page.getByTestId('rewind-message')).toContainText('1 results moved to history');
  expect(history(runId)).toBe(1);
});

test('the rerun dialog names the child runs it would let go, and the rerun lets go those', async ({ page }) => {
  const runId = uniqueId('e2e-let-go');
  await seedParent(runId);
  const run = new RunPage(page);
  const dialog = new ConfirmDialog(page);
  await run.goto(runId);

  await page.getByTestId('rewind-step').fill('0');
  await page.getByTestId('action-rerun').click();
  await expect(dialog.root.getByTestId('rerun-let-go')).toHaveAttribute('data-count', '3');
  await dialog.keep.click();

  await page.getByTestId('rewind-step').fill('1');
  await page.getByTestId('action-rerun').click();
  const letGo = dialog.root.getByTestId('rerun-let-go');
  await expect(letGo).toHaveAttribute('data-count', '1');
  await expect(letGo.getByTestId('rerun-let-go-child')).toHaveText([`${runId}:cagent-batchcompleted`]);
  await dialog.confirm();
  await expect(page.getByTestId('rewind-message')).toContainText('results moved to history');
  const parents = readDb(
    (db) =>
      db
        .prepare('SELECT id FROM runs WHERE parent_run_id IS NULL AND detached = 1 AND id LIKE ?')
        .all(`${runId}:%`) as { id: string }[],
  );
  expect(parents.map((r) => r.id)).toEqual([`${runId}:c`]);
});
