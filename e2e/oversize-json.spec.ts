/**
 * A JSON text past WAYBILL_MAX_BODY_BYTES typed into a dashboard form. Past Next.js's own limit for an action's
 * body (a quarter above it, held by lib/launch/http-guard.mjs) the server answers 413 without reading it, which
 * the page can only show as "This page could not be loaded", the text lost. So each form refuses such a text
 * itself, in the server's words, and keeps it: the claims page's resolve form, the schedules page's add form, and
 * the run page's own resolve form and rerun / fork input here; the start form in security.spec.ts.
 */
import type { RunStore, Store } from '../lib/store/contract';
import { openStore } from '../lib/store/index';
import type { SqliteStore } from '../lib/store/sqlite';
import { ClaimsPage } from './pages/claims-page';
import { ConfirmDialog } from './pages/confirm-dialog';
import { RunPage } from './pages/run-page';
import { expect, noChromium, test, uniqueId } from './support/test';
import { databaseUrl, readDb, waybill } from './support/waybill';

test.skip(noChromium, 'no chromium');

/** Three times the default limit: far past Next.js's 1.25 MiB too. */
const huge = (fill: string) => JSON.stringify({ summary: fill.repeat(3 * 1024 * 1024) });
const refusal = (text: string) =>
  `is ${text.length.toLocaleString('en-US')} bytes: the limit is 1,048,576 bytes (WAYBILL_MAX_BODY_BYTES)`;

async function withStore<T>(fn: (store: Store & RunStore) => Promise<T>): Promise<T> {
  const store = (await openStore(databaseUrl(), { synchronous: 'normal' })) as Store & RunStore;
  try {
    return await fn(store);
  } finally {
    await store.close();
  }
}

/** A claim on `key` (step `step`) of run `runId` whose holder is gone: its lease passes at once. */
async function orphanedClaim(runId: string, key: string, step = 0): Promise<void> {
  await withStore(async (store) => {
    const outcome = await store.claim({
      idemKey: key,
      runId,
      token: `t-${key}`,
      workerId: 'gone-worker',
      step,
      attempt: 1,
      leaseMs: 1,
      claimTtlMs: 30_000,
    });
    expect(outcome.kind).toBe('claimed');
    await expect
      .poll(async () =>
        (await store.listClaims({ orphanedOnly: true, claimTtlMs: 30_000 })).some((c) => c.idemKey === key),
      )
      .toBe(true);
  });
}

/** What resolving the claim would change: its claim row, a committed row, its run's events, an audit line. */
const claimState = (runId: string, key: string) =>
  readDb((db) => ({
    claim: db.prepare('SELECT token, attempt, lease_expires_at FROM claims WHERE idem_key = ?').all(key),
    committed: db.prepare('SELECT count(*) AS n FROM committed WHERE idem_key = ?').get(key),
    events: db.prepare('SELECT count(*) AS n FROM step_events WHERE run_id = ?').get(runId),
    audit: db.prepare('SELECT count(*) AS n FROM audit WHERE target = ?').get(key),
  }));

test('a result past the body limit is refused under the field on /claims, kept, and nothing is resolved', async ({
  page,
}) => {
  const runId = uniqueId('e2e-huge-result');
  const key = `${runId}:step:0`;
  await orphanedClaim(runId, key);
  const before = claimState(runId, key);
  expect(before.claim).toHaveLength(1);

  const claims = new ClaimsPage(page);
  await claims.goto();
  await expect(claims.orphaned(key)).toBeVisible();
  const result = huge('y');
  await claims.resolve(key, result);

  const row = claims.row(key);
  await expect(row.getByTestId('field-error-result')).toHaveText(refusal(result));
  await expect(row.getByTestId('resolve-result')).toHaveAttribute('aria-invalid', 'true');
  expect(await row.getByTestId('resolve-result').inputValue()).toBe(result);
  await expect(page.getByTestId('error-boundary')).toHaveCount(0);
  await expect(claims.orphaned(key)).toBeVisible();
  expect(claimState(runId, key)).toEqual(before);

  // The form still works, and the refusal goes with the next send.
  await row.getByTestId('resolve-result').fill('{"sent": true}');
  await row.getByTestId('resolve-submit').click();
  await expect(claims.message).toContainText(/resolved/i);
  await expect(claims.row(key)).toHaveCount(0);
  expect(claimState(runId, key).committed).toEqual({ n: 1 });
});

test('a schedule input past the body limit is refused under the field, kept, and nothing is added', async ({
  page,
}) => {
  const name = uniqueId('e2e-huge-sched');
  const schedules = () =>
    readDb((db) => db.prepare('SELECT count(*) AS n FROM schedules WHERE name = ?').get(name)) as { n: number };
  await page.goto('/schedules');
  await page.getByTestId('schedule-add-open').click();
  await page.getByTestId('schedule-field-name').fill(name);
  await page.getByTestId('schedule-field-workflow').selectOption('agent-batch');
  await page.getByTestId('schedule-field-cron').fill('0 30 4 * * *');
  const input = huge('z');
  await page.getByTestId('schedule-field-input').fill(input);
  await page.getByTestId('schedule-add-submit').click();

  await expect(page.getByTestId('schedule-error-input')).toHaveText(refusal(input));
  expect(await page.getByTestId('schedule-field-input').inputValue()).toBe(input);
  await expect(page.getByTestId('error-boundary')).toHaveCount(0);
  await expect(page.getByTestId(`schedule-${name}`)).toHaveCount(0);
  expect(schedules()).toEqual({ n: 0 });

  await page.getByTestId('schedule-field-input').fill('{"count": 1}');
  await page.getByTestId('schedule-add-submit').click();
  await expect(page.getByTestId('schedule-add-message')).toHaveText(`added schedule ${name}`);
  await expect(page.getByTestId('schedule-error-input')).toHaveCount(0);
  expect(schedules()).toEqual({ n: 1 });
  await waybill(['schedule', 'delete', name]);
});

/** A paused or completed run of agent-batch (no worker picks it up) with three committed steps. */
async function seedRun(id: string, status: 'paused' | 'completed'): Promise<void> {
  await withStore(async (store) => {
    const db = (store as unknown as SqliteStore).db;
    const now = Date.now() / 1000;
    db.prepare(`INSERT INTO runs (id, workflow, input_json, status, total_steps, attempts, created_at, updated_at)
        VALUES (?, 'agent-batch', '{"count":3}', ?, 3, 1, ?, ?)`).run(id, status, now, now);
    for (let n = 0; n < 3; n++)
      db.prepare(`INSERT INTO committed (idem_key, run_id, result_json, committed_at, step, worker_id, duration_ms, source)
          VALUES (?, ?, '{}', ?, ?, 'w1', 5, 'executed')`).run(`${id}:step:${n}`, id, now, n);
  });
}

/** What a rerun or a fork of run `id` would change: its row, its committed and moved rows, forks, events, audit. */
const runState = (id: string) =>
  readDb((db) => ({
    run: db.prepare('SELECT status, input_json, attempts, updated_at FROM runs WHERE id = ?').get(id),
    committed: db.prepare('SELECT count(*) AS n FROM committed WHERE run_id = ?').get(id),
    history: db.prepare('SELECT count(*) AS n FROM committed_history WHERE run_id = ?').get(id),
    forks: db.prepare('SELECT count(*) AS n FROM runs WHERE id LIKE ?').get(`${id}-fork-%`),
    events: db.prepare('SELECT count(*) AS n FROM step_events WHERE run_id = ?').get(id),
    audit: db.prepare('SELECT count(*) AS n FROM audit WHERE target = ?').get(id),
  }));

test('a result past the body limit is refused under the field on the run page, kept, and nothing is resolved', async ({
  page,
}) => {
  const runId = uniqueId('e2e-huge-run-result');
  const key = `${runId}:step:3`;
  await seedRun(runId, 'paused');
  await orphanedClaim(runId, key, 3);
  const before = claimState(runId, key);
  expect(before.claim).toHaveLength(1);

  const run = new RunPage(page);
  await run.goto(runId);
  const item = page.getByTestId('claim-item').filter({ hasText: key });
  await expect(item).toHaveAttribute('data-orphaned', 'true');
  await item.getByTestId('claim-resolve').click();
  const result = huge('r');
  await item.getByTestId('resolve-result').fill(result);
  await item.getByTestId('resolve-submit').click();

  await expect(item.getByTestId('field-error-result')).toHaveText(refusal(result));
  await expect(item.getByTestId('resolve-result')).toHaveAttribute('aria-invalid', 'true');
  expect(await item.getByTestId('resolve-result').inputValue()).toBe(result);
  await expect(page.getByTestId('error-boundary')).toHaveCount(0);
  expect(claimState(runId, key)).toEqual(before);

  // The form still works, and the refusal goes with the next send.
  await item.getByTestId('resolve-result').fill('{"sent": true}');
  await item.getByTestId('resolve-submit').click();
  await expect(page.getByTestId('claim-item').filter({ hasText: key })).toHaveCount(0);
  expect(claimState(runId, key).committed).toEqual({ n: 1 });
});

test('a rerun or fork input past the body limit is refused on the run page, kept, and nothing is rewound', async ({
  page,
}) => {
  const runId = uniqueId('e2e-huge-rewind');
  await seedRun(runId, 'completed');
  const before = runState(runId);
  const run = new RunPage(page);
  const dialog = new ConfirmDialog(page);
  await run.goto(runId);
  const input = huge('i');
  await run.rewind.step.fill('1');
  await run.rewind.input.fill(input);

  for (const action of [run.rewind.rerun, run.rewind.fork]) {
    await action.click();
    await dialog.confirm('e2e: an oversize input');
    await expect(run.rewind.message).toContainText('the input is too large');
    await expect(run.rewind.message.getByTestId('rewind-field-error')).toHaveText(`input: ${refusal(input)}`);
    await expect(run.rewind.input).toHaveAttribute('aria-invalid', 'true');
    expect(await run.rewind.input.inputValue()).toBe(input);
    await expect(page.getByTestId('error-boundary')).toHaveCount(0);
    expect(runState(runId)).toEqual(before);
  }

  // A small input still goes through.
  await run.rewind.input.fill('{"count": 3}');
  await run.rewind.rerun.click();
  await dialog.confirm();
  await expect(run.rewind.message).toContainText('results moved to history');
  await expect(run.rewind.input).not.toHaveAttribute('aria-invalid', 'true');
  expect(runState(runId).history).toEqual({ n: 2 });
});
