/**
 * Issue 23, items 3, 4 and 8 in Chromium: a missing step says which and links its run; a refused rerun says
 * its reason once, beside the form, in view; a fork is named from the page and opens; a leased claim with no
 * worker is not called an outside client's; a disabled bulk Cancel looks disabled and says why; the audit page
 * filters as the API does; the workers page lists what each worker serves.
 */
import Database from 'better-sqlite3';
import type { RunStore, Store } from '../lib/store/contract';
import { openStore } from '../lib/store/index';
import { AuditPage } from './pages/audit-page';
import { ClaimsPage } from './pages/claims-page';
import { ConfirmDialog } from './pages/confirm-dialog';
import { RunPage } from './pages/run-page';
import { WorkersPage } from './pages/workers-page';
import { expect, noChromium, test, uniqueId } from './support/test';
import { databaseUrl, readDb } from './support/waybill';

test.skip(noChromium, 'no chromium');

async function withStore<T>(fn: (store: Store & RunStore) => Promise<T>): Promise<T> {
  const store = (await openStore(databaseUrl(), { synchronous: 'normal' })) as Store & RunStore;
  try {
    return await fn(store);
  } finally {
    await store.close();
  }
}

/** A cancelled agent-batch run of three steps: one a rerun or a fork may start from. */
async function cancelledRun(prefix: string): Promise<string> {
  const id = uniqueId(prefix);
  await withStore(async (store) => {
    await store.createRun({ id, workflow: 'agent-batch', inputJson: '{"count":3}', totalSteps: 3 });
    await store.actOnRun(id, 'cancel', 'e2e');
  });
  return id;
}

test('a missing step names the step and links its run; "abc" is no step number; a missing run is one', async ({
  page,
}) => {
  const id = await cancelledRun('e2e-steps');
  const run = new RunPage(page);
  const reason = page.getByTestId('step-not-found-reason');
  const link = page.getByTestId('step-not-found-run');

  expect(await run.gotoStep(id, '999')).toBe(404);
  await expect(reason).toHaveText(`Run ${id} has no step 999: its steps are 0 to 2.`);
  await expect(run.notFound).toHaveCount(0);
  await expect(link).toHaveAttribute('href', `/runs/${encodeURIComponent(id)}`);

  expect(await run.gotoStep(id, 'abc')).toBe(404);
  await expect(reason).toHaveText('“abc” is not a step number: steps are numbered 0, 1, 2, …');
  await link.click();
  await expect(page).toHaveURL(new RegExp(`/runs/${encodeURIComponent(id)}$`));
  await expect(run.status).toBeVisible();

  const nowhere = uniqueId('e2e-no-run');
  expect(await run.gotoStep(nowhere, '3')).toBe(404);
  await expect(reason).toHaveText(
    `No run, progress or claim has the id “${nowhere}”, so it has no step 3 either. It may be mistyped, or the run lives in another database.`,
  );
  await expect(link).toHaveCount(0);
});

test('a stalled run shows no ETA: its last rate is no promise while its owner is silent', async ({ page }) => {
  const worker = uniqueId('e2e-eta-w');
  const runId = uniqueId('e2e-eta-run');
  const workflow = `e2e-eta-${Date.now().toString(36)}`;
  await withStore(async (store) => {
    await store.registerWorker({ id: worker, host: 'e2e', pid: 1 });
    await store.publishWorkflows(worker, [
      { name: workflow, description: null, inputSchemaJson: '{}', totalSteps: 10, version: null },
    ]);
    await store.createRun({ id: runId, workflow, inputJson: '{}', totalSteps: 10 });
    await store.claimRun({ workerId: worker, leaseMs: 600_000, workflows: [workflow], runId });
  });
  // Two steps a second apart, just now (a rate of 60 steps/min), and an owner silent for a minute.
  const db = new Database(databaseUrl().replace(/^file:/, ''));
  try {
    const now = Date.now() / 1000;
    const commit = db.prepare(
      'INSERT INTO committed(idem_key, run_id, step, result_json, committed_at) VALUES (?, ?, ?, ?, ?)',
    );
    commit.run(`${runId}:step:0`, runId, 0, '{}', now - 3);
    commit.run(`${runId}:step:1`, runId, 1, '{}', now - 2);
    db.prepare('INSERT INTO progress(run_id, step, state_json, updated_at) VALUES (?, ?, ?, ?)').run(
      runId,
      2,
      '{}',
      now - 2,
    );
    db.prepare('UPDATE workers SET heartbeat_at = heartbeat_at - 60 WHERE id = ?').run(worker);
  } finally {
    db.close();
  }
  const run = new RunPage(page);
  await run.goto(runId);
  await expect(page.getByTestId('run-stall-reason')).toContainText(`Stalled: owner ${worker} silent since`);
  await expect(page.getByTestId('run-eta')).toHaveCount(0);
  await expect(page.getByTestId('run-progress-card')).toContainText('at step 2.');
  await withStore(async (store) => {
    await store.actOnRun(runId, 'cancel', 'e2e');
    await store.stopWorker(worker);
  });
});

test('a refused rerun says its reason once, beside the form and in view; a good one says so there too', async ({
  page,
}) => {
  await page.setViewportSize({ width: 1280, height: 900 });
  const id = await cancelledRun('e2e-rerun-refused');
  const run = new RunPage(page);
  const dialog = new ConfirmDialog(page);
  await run.goto(id);
  await run.rewind.step.fill('0');
  await run.rewind.input.fill('{"count":"three"}');
  await run.rewind.rerun.click();
  await dialog.confirm();
  await expect(run.rewind.message).toHaveText(
    "input does not match agent-batch's schema: input.count: must be a number",
  );
  await expect(run.rewind.message).toBeInViewport();
  await expect(run.rewind.message).toBeFocused();
  await expect(run.rewind.input).toHaveAttribute('aria-invalid', 'true');
  expect(readDb((db) => db.prepare('SELECT status FROM runs WHERE id = ?').get(id))).toEqual({ status: 'cancelled' });

  // Invalid JSON: the message and the parser's reason, each once.
  await run.rewind.input.fill('{count: 3}');
  await run.rewind.rerun.click();
  await dialog.confirm();
  await expect(run.rewind.message.locator('p')).toHaveText([
    'the input is not valid JSON',
    /^input: is not valid JSON at line 1 column 2 \(position 1\): Expected property name/,
  ]);

  await page.evaluate(() => window.scrollTo(0, 0));
  await run.rewind.input.fill('');
  await run.rewind.rerun.click();
  await dialog.confirm();
  await expect(run.rewind.message).toContainText('rerun 1 from step 0: 0 results moved to history');
  await expect(run.rewind.message).toBeInViewport();
});

test('a fork is named from the page, and the page goes to the new run', async ({ page }) => {
  const id = await cancelledRun('e2e-fork-named');
  const named = `${id}-named`;
  const run = new RunPage(page);
  const dialog = new ConfirmDialog(page);
  await run.goto(id);
  await run.rewind.step.fill('0');
  await run.rewind.forkId.fill(named);
  await run.rewind.fork.click();
  await expect(dialog.root.getByRole('heading')).toHaveText(`Fork ${id} from step 0 as ${named}?`);
  await dialog.confirm();
  await expect(page).toHaveURL(new RegExp(`/runs/${encodeURIComponent(named)}$`));
  await expect(run.status).toBeVisible();
  expect(readDb((db) => db.prepare('SELECT forked_from_run AS f FROM runs WHERE id = ?').get(named))).toEqual({
    f: id,
  });

  // A taken id is refused beside the field, and the page stays.
  await run.goto(id);
  await run.rewind.step.fill('0');
  await run.rewind.forkId.fill(named);
  await run.rewind.fork.click();
  await dialog.confirm();
  await expect(run.rewind.message).toContainText(named);
  await expect(run.rewind.message).toBeInViewport();
  await expect(page).toHaveURL(new RegExp(`/runs/${encodeURIComponent(id)}$`));
});

test('a leased claim with no worker is a protocol client, as the API says, not an outside client', async ({ page }) => {
  const runId = uniqueId('e2e-leased');
  const key = `${runId}:step:0`;
  await withStore((store) =>
    store.claim({
      idemKey: key,
      runId,
      token: 'e2e-protocol-client-token',
      workerId: null,
      step: 0,
      attempt: 1,
      leaseMs: 1,
      claimTtlMs: 30_000,
    }),
  );
  const api = await page.request.get(`/api/v1/claims?runId=${encodeURIComponent(runId)}`);
  const claims = ((await api.json()) as { claims: { key: string; outsideClient: boolean; orphaned: boolean }[] })
    .claims;
  expect(claims.map((c) => [c.key, c.outsideClient, c.orphaned])).toEqual([[key, false, true]]);

  const page_ = new ClaimsPage(page);
  await page_.goto();
  await expect(page_.holder(key)).toHaveText('protocol client');
  await expect(page_.orphaned(key)).toContainText(
    'Its holder neither committed nor renewed before its lease passed; whether the side effect happened is unknown.',
  );
  await expect(page_.row(key)).not.toContainText('outside client');
  await withStore((store) => store.expireClaim(key, { actor: 'e2e', force: true, claimTtlMs: 30_000 }));
});

test('a disabled bulk Cancel is grey and says why; one run cancelled is "1 run"', async ({ page }) => {
  const prefix = uniqueId('e2e-bulk-why');
  await withStore(async (store) => {
    await store.createRun({ id: `${prefix}-done`, workflow: 'agent-batch', inputJson: '{"count":1}', totalSteps: 1 });
    await store.actOnRun(`${prefix}-done`, 'cancel', 'e2e');
    await store.createRun({ id: `${prefix}-queued`, workflow: 'agent-batch', inputJson: '{"count":1}', totalSteps: 1 });
  });
  await page.goto(`/?q=${encodeURIComponent(prefix)}`);
  const cancel = page.getByTestId('bulk-cancel');
  const background = () => cancel.evaluate((b) => getComputedStyle(b).backgroundColor);
  await expect(cancel).toBeDisabled();
  await expect(cancel).toHaveAttribute('title', 'select runs first: tick them in the list');
  await expect(page.getByTestId('selected-count')).toHaveText('Select runs to act on them');
  const disabled = await background();
  await page.getByTestId(`select-${prefix}-queued`).check();
  await expect(cancel).toBeEnabled();
  await expect(cancel).toHaveAttribute('title', 'Cancel the selected runs');
  expect(await background()).not.toBe(disabled);

  await cancel.click();
  await new ConfirmDialog(page).confirm();
  await expect(page.getByTestId('bulk-message')).toHaveText('cancel: 1 run done');

  await page.getByTestId('bulk-all-matching').check();
  await expect(page.getByTestId('selected-count')).toHaveText('2 runs matching this filter');
  await expect(page.getByTestId('bulk-cancel')).toBeDisabled();
  await expect(page.getByTestId('bulk-disabled-reason')).toContainText(
    'Cancel: none of the 2 runs matching this filter can be cancelled now',
  );
});

test('the audit page filters by run, action and time with the API query, and says what is wrong', async ({ page }) => {
  const runA = uniqueId('e2e-audit-a');
  const runB = uniqueId('e2e-audit-b');
  await withStore(async (store) => {
    for (const [runId, action] of [
      [runA, 'pause'],
      [runA, 'cancel'],
      [runB, 'cancel'],
    ] as const)
      await store.recordAudit({ actor: 'e2e', role: 'local', action, target: runId, runId, detail: null });
  });
  const audit = new AuditPage(page);
  await audit.goto();
  await audit.filter({ runId: runA });
  await expect(page).toHaveURL(new RegExp(`[?&]runId=${runA}`));
  await expect(audit.targets).toHaveText([runA, runA]);
  await audit.filter({ action: 'cancel' });
  await expect(audit.targets).toHaveText([runA]);
  await expect(page.getByTestId('audit-filter-run')).toHaveValue(runA);

  await page.goto(`/audit?runId=${runB}&since=yesterday`);
  await expect(audit.error).toHaveText('since: must be epoch seconds or an ISO 8601 date-time (2026-12-01T10:00:00Z)');
  await expect(audit.table).toHaveCount(0);
  await page.goto(`/audit?runId=${runB}&since=2000-01-01T00:00:00Z`);
  await expect(audit.targets).toHaveText([runB]);
});

test('the workers page lists the workflows each live worker serves, and its slots in use', async ({ page }) => {
  const worker = uniqueId('e2e-serving');
  const unrecorded = uniqueId('e2e-no-slots');
  const held = uniqueId('e2e-held');
  await withStore(async (store) => {
    await store.registerWorker({ id: worker, host: 'e2e', pid: 1, slots: 3 });
    await store.registerWorker({ id: unrecorded, host: 'e2e', pid: 2 });
    await store.publishWorkflows(
      worker,
      ['e2e-serve-b', 'e2e-serve-a'].map((name) => ({
        name,
        description: null,
        inputSchemaJson: '{}',
        totalSteps: 1,
        version: null,
      })),
    );
  });
  const workers = new WorkersPage(page);
  await workers.goto();
  await expect(workers.serves(worker)).toHaveText(['e2e-serve-a', 'e2e-serve-b']);
  await expect(workers.slots(worker)).toHaveText('0 of 3 busy');
  await expect(workers.slots(unrecorded)).toHaveText('0 of 1 busy');
  await expect(workers.row(unrecorded)).toContainText('slots not recorded: counted as 1');
  await withStore(async (store) => {
    await store.createRun({ id: held, workflow: 'e2e-serve-a', inputJson: '{}', totalSteps: 1 });
    await store.claimRun({ workerId: worker, leaseMs: 600_000, workflows: ['e2e-serve-a'], runId: held });
  });
  await workers.goto();
  await expect(workers.slots(worker)).toHaveText('1 of 3 busy');
  await expect(workers.row(worker).getByRole('link', { name: held })).toBeVisible();
  await withStore(async (store) => {
    await store.actOnRun(held, 'cancel', 'e2e');
    await store.stopWorker(worker);
    await store.stopWorker(unrecorded);
  });
  await workers.goto();
  await expect(workers.serves(worker)).toHaveCount(0);
});
