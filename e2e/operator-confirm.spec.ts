/**
 * Issue 11, items 17 and 19: cancel (one run and many) and expire ask first, and the reason given lands in
 * the audit log; the run's timeline is newest first, in the page's own scroll, filtered by kind, and shows
 * each operator action once.
 */

import type { AuditStore, RunStore, Store } from '../lib/store/contract';
import { openStore } from '../lib/store/index';
import { ClaimsPage } from './pages/claims-page';
import { ConfirmDialog } from './pages/confirm-dialog';
import { RunPage } from './pages/run-page';
import { RunsPage } from './pages/runs-page';
import { expect, noChromium, test, uniqueId } from './support/test';
import { databaseUrl, readDb, waybill } from './support/waybill';

test.skip(noChromium, 'no chromium');

type FullStore = Store & RunStore & AuditStore;

const statusOf = (id: string) =>
  readDb(
    (db) => (db.prepare('SELECT status FROM runs WHERE id = ?').get(id) as { status: string } | undefined)?.status,
  );
const auditOf = (target: string) =>
  readDb((db) => db.prepare('SELECT action, detail FROM audit WHERE target = ? ORDER BY id').all(target)) as {
    action: string;
    detail: string | null;
  }[];

async function withStore<T>(fn: (store: FullStore) => Promise<T>): Promise<T> {
  const store = (await openStore(databaseUrl(), { synchronous: 'normal' })) as FullStore;
  try {
    return await fn(store);
  } finally {
    await store.close();
  }
}

test('the run page asks before it cancels; the timeline is newest first, filtered by kind, each action once', async ({
  page,
}) => {
  const runId = uniqueId('e2e-confirm-run');
  await withStore((store) =>
    store.createRun({ id: runId, workflow: 'agent-batch', inputJson: '{"count":3}', totalSteps: 3 }),
  );
  const run = new RunPage(page);
  const dialog = new ConfirmDialog(page);
  await run.goto(runId);

  await page.getByTestId('action-pause').click();
  await expect(run.status).toHaveText(/paused/);
  await page.getByTestId('action-resume').click();
  await expect(run.status).toHaveText(/queued/);

  // One click is not a cancel: the dialog opens and "Keep it" leaves the run as it was.
  await page.getByTestId('action-cancel').click();
  await expect(dialog.root).toBeVisible();
  await dialog.keep.click();
  await expect(dialog.root).toHaveCount(0);
  expect(statusOf(runId)).toBe('queued');

  await page.getByTestId('action-cancel').click();
  await dialog.confirm('e2e: started with the wrong input');
  await expect(run.status).toHaveText(/cancelled/);
  expect(auditOf(runId)).toEqual([
    { action: 'pause', detail: null },
    { action: 'resume', detail: null },
    { action: 'cancel', detail: 'reason: e2e: started with the wrong input' },
  ]);

  // Newest first, each action once: three audit lines, and none of the store's own events for them.
  await expect(run.timelineItems).toHaveCount(3);
  await expect(run.timelineItems.nth(0)).toHaveAttribute('data-action', 'cancel');
  await expect(run.timelineItems.nth(0)).toContainText('queued → cancelled');
  await expect(run.timelineItems.nth(0)).toContainText('reason: e2e: started with the wrong input');
  await expect(run.timelineItems.nth(2)).toHaveAttribute('data-action', 'pause');
  await expect(run.events('operator')).toHaveCount(0);

  // No scroller of its own: the page's scroll shows everything.
  const box = await run.timeline.getByTestId('timeline-items').evaluate((el) => {
    const style = getComputedStyle(el);
    return { overflowY: style.overflowY, maxHeight: style.maxHeight, scrolls: el.scrollHeight > el.clientHeight + 1 };
  });
  expect(box).toEqual({ overflowY: 'visible', maxHeight: 'none', scrolls: false });

  // The filter: operator actions only, then steps only (none yet), then all again.
  await run.filter('operator').click();
  await expect(run.filter('operator')).toHaveAttribute('aria-pressed', 'true');
  await expect(run.timelineItems).toHaveCount(3);
  await run.filter('steps').click();
  await expect(run.timeline.getByTestId('timeline-none')).toBeVisible();
  await run.filter('all').click();
  await expect(run.timelineItems).toHaveCount(3);
});

test('bulk cancel asks first, names the runs, and keeps the reason for each run in /audit', async ({ page }) => {
  const ids = [uniqueId('e2e-bulk-a'), uniqueId('e2e-bulk-b')];
  await withStore(async (store) => {
    for (const id of ids)
      await store.createRun({ id, workflow: 'agent-batch', inputJson: '{"count":3}', totalSteps: 3 });
  });
  const runs = new RunsPage(page);
  const dialog = new ConfirmDialog(page);
  await runs.goto();
  for (const id of ids) await page.getByTestId(`select-${id}`).check();
  await page.getByTestId('bulk-cancel').click();
  await expect(dialog.root).toBeVisible();
  await expect(dialog.root.getByTestId('confirm-targets')).toContainText(ids[0]!);
  await expect(dialog.root.getByTestId('confirm-targets')).toContainText(ids[1]!);
  // Escape closes it and changes nothing.
  await page.keyboard.press('Escape');
  await expect(dialog.root).toHaveCount(0);
  expect(ids.map(statusOf)).toEqual(['queued', 'queued']);

  await page.getByTestId('bulk-cancel').click();
  await dialog.confirm('e2e: duplicate batch');
  await expect(page.getByTestId('bulk-message')).toContainText('cancel: 2 runs done');
  expect(ids.map(statusOf)).toEqual(['cancelled', 'cancelled']);
  for (const id of ids) expect(auditOf(id)).toEqual([{ action: 'cancel', detail: 'reason: e2e: duplicate batch' }]);

  await page.goto('/audit');
  for (const id of ids) {
    const row = page
      .getByTestId('audit-table')
      .locator('tr', { has: page.getByTestId('audit-target').filter({ hasText: id }) });
    await expect(row.getByTestId('audit-detail')).toHaveText('reason: e2e: duplicate batch');
  }
});

test('expire asks first and keeps the reason; the claims header does not count an orphaned claim as executing', async ({
  page,
}) => {
  const runId = uniqueId('e2e-expire');
  const key = `${runId}:step:0`;
  await withStore(async (store) => {
    const outcome = await store.claim({
      idemKey: key,
      runId,
      token: `t-${key}`,
      workerId: 'gone-worker',
      step: 0,
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
  const claims = new ClaimsPage(page);
  const dialog = new ConfirmDialog(page);
  await claims.goto();
  await expect(claims.orphaned(key)).toBeVisible();
  const orphaned = Number((await page.getByTestId('orphaned-count').textContent())!.match(/\d+/)![0]);
  const total = await claims.table.locator('tbody tr').count();
  const summary = page.getByTestId('claims-live-count');
  await expect(summary).toContainText(`${orphaned} orphaned claim`);
  if (total === orphaned) await expect(summary).toContainText('No side effect is being executed right now');

  await page.getByTestId(`expire-${key}`).click();
  await expect(dialog.root).toContainText(key);
  await dialog.keep.click();
  await expect(claims.row(key)).toBeVisible();

  await claims.expire(key, 'e2e: the provider never got it');
  await expect(claims.message).toContainText(/expired/i);
  await expect(claims.row(key)).toHaveCount(0);
  expect(auditOf(key)).toEqual([{ action: 'expire', detail: 'reason: e2e: the provider never got it' }]);
});

test("a CLI cancel is on /audit and in the run's timeline like the dashboard's, under its --as name", async ({
  page,
}) => {
  const runId = uniqueId('e2e-cli-audit');
  await withStore((store) =>
    store.createRun({ id: runId, workflow: 'agent-batch', inputJson: '{"count":3}', totalSteps: 3 }),
  );
  await waybill(['cancel', runId, '--as', 'e2e-ann', '--reason', 'e2e: cancelled from a terminal']);
  expect(
    readDb((db) => db.prepare('SELECT actor, role, action, detail FROM audit WHERE target = ?').all(runId)),
  ).toEqual([{ actor: 'e2e-ann', role: 'local', action: 'cancel', detail: 'reason: e2e: cancelled from a terminal' }]);

  await page.goto('/audit');
  const row = page.getByTestId('audit-table').locator('tr', { hasText: runId });
  await expect(row).toHaveCount(1);
  await expect(row.getByTestId('audit-who')).toHaveText('e2e-ann');
  await expect(row.getByTestId('audit-action')).toHaveText('cancel');
  await expect(row.getByTestId('audit-detail')).toHaveText('reason: e2e: cancelled from a terminal');

  const run = new RunPage(page);
  await run.goto(runId);
  await expect(run.status).toHaveText(/cancelled/);
  await expect(run.timelineItems.nth(0)).toHaveAttribute('data-action', 'cancel');
  await expect(run.timelineItems.nth(0)).toContainText('reason: e2e: cancelled from a terminal');
});
