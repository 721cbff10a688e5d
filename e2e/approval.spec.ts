/**
 * Issue 15 in a browser: a review-and-send run waits on its run page with the draft to approve; an operator
 * approves it there (the message is delivered exactly once, by the outbox's own count, and the decision is on
 * the timeline once) or rejects it (a note is asked for; nothing is delivered; the run ends `rejected`; the
 * note is in the audit log). A viewer sees the same wait read-only, with no buttons. The runs list filters
 * the runs waiting for approval (in the URL and the filter bar), counts them, and links the oldest.
 */
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import Database from 'better-sqlite3';
import { readOutbox } from '../lib/engine/workflows/outbox';
import { openStore } from '../lib/store/index';
import { RunPage } from './pages/run-page';
import { RunsPage } from './pages/runs-page';
import { E2E_VIEWER_TOKEN, openSecuredStore, securedURL, signIn } from './support/secured';
import { expect, noChromium, test, uniqueId } from './support/test';
import { databaseUrl, queueRun, readDb, startWorker, waybill } from './support/waybill';

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
  // The decision is on the timeline once: its audit line (who, the note), which stands for the store's event.
  await expect(run.action('approve')).toHaveCount(1);
  await expect(run.action('approve')).toContainText('reads well');
  await expect(run.events('operator').filter({ hasText: 'approval review approved' })).toHaveCount(0);

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
    expect(await store.parkRun(runId, 'approval', 'review', 'seeder', taken!.attempts)).toBe('parked');
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

/** Runs parked at a wait as a worker leaves them, of a workflow no worker serves (so none moves them meanwhile). */
async function parkRuns(runs: { id: string; kind: 'approval' | 'signal'; name: string }[]): Promise<void> {
  const store = await openStore(databaseUrl(), { synchronous: 'normal' });
  try {
    for (const run of runs) {
      await store.createRun({ id: run.id, workflow: 'e2e-nobody-serves', inputJson: '{}', totalSteps: 1 });
      const taken = await store.claimRun({
        workerId: 'e2e-seeder',
        leaseMs: 60_000,
        workflows: ['e2e-nobody-serves'],
        runId: run.id,
      });
      await store.recordWait({ runId: run.id, name: run.name, kind: run.kind, detailsJson: '{"message":"hi"}' });
      expect(await store.parkRun(run.id, run.kind, run.name, 'e2e-seeder', taken!.attempts)).toBe('parked');
    }
  } finally {
    await store.close();
  }
}

const waitingApprovals = () =>
  readDb(
    (db) =>
      (
        db
          .prepare(
            `SELECT count(DISTINCT w.run_id) AS n FROM waits w JOIN runs r ON r.id = w.run_id
             WHERE r.status = 'waiting' AND w.kind = 'approval' AND w.decided_at IS NULL`,
          )
          .get() as { n: number }
      ).n,
  );

test('the runs list: runs waiting for approval filtered and counted, the oldest named and linked; decided once', async ({
  page,
}) => {
  const oldest = uniqueId('e2e-oldest-ask');
  const newer = uniqueId('e2e-newer-ask');
  const hook = uniqueId('e2e-hook');
  await parkRuns([
    { id: oldest, kind: 'approval', name: 'sign-off' },
    { id: newer, kind: 'approval', name: 'review' },
    { id: hook, kind: 'signal', name: 'settled' },
  ]);
  // Two hours older than anything else this suite makes, as another client's row would be.
  const db = new Database(databaseUrl().slice('file:'.length));
  try {
    db.prepare('UPDATE waits SET created_at = created_at - 7200 WHERE run_id = ?').run(oldest);
  } finally {
    db.close();
  }

  const runs = new RunsPage(page);
  await runs.goto();
  const count = String(waitingApprovals());
  await expect(page.getByTestId('waiting-approvals-count')).toHaveText(count);
  await expect(page.getByTestId('waiting-count-approval')).toHaveText(count);
  const link = page.getByTestId('waiting-oldest-link');
  await expect(link).toHaveText(oldest);
  await expect(link).toHaveAttribute('href', `/runs/${oldest}`);
  await expect(page.getByTestId('waiting-oldest-name')).toHaveText('sign-off');
  await expect(page.getByTestId('waiting-oldest-age')).toHaveText('2 h');
  await expect(page.getByTestId('waiting-oldest-since')).toHaveAttribute('datetime', /^\d{4}-\d\d-\d\dT/);

  // The count is a filter, and the filter is in the URL.
  await page.getByTestId('waiting-filter-approval').click();
  await expect(page).toHaveURL(/[?&]waiting=approval(&|$)/);
  await expect(runs.row(oldest)).toBeVisible();
  await expect(runs.row(newer)).toBeVisible();
  await expect(runs.row(hook)).toHaveCount(0);
  await expect(page.getByTestId('filter-waiting')).toHaveValue('approval');
  await expect(page.locator('[data-testid^="run-status-"]')).toHaveCount(waitingApprovals());

  // The filter bar's own select: a signal.
  await page.getByTestId('filter-waiting').selectOption('signal');
  await page.getByTestId('filter-submit').click();
  await expect(page).toHaveURL(/[?&]waiting=signal(&|$)/);
  await expect(runs.row(hook)).toBeVisible();
  await expect(runs.row(oldest)).toHaveCount(0);

  // A hand-edited URL is never an error page: what does not hold is dropped, and said so.
  await page.goto('/?waiting=human');
  await expect(page.getByTestId('filters-ignored')).toContainText('the waiting filter');
  await page.goto('/?waiting=approval&status=queued');
  await expect(page.getByTestId('filters-ignored')).toContainText('another status was asked for');
  await expect(runs.row(oldest)).toHaveCount(0);

  // The oldest, decided from its own page: on its timeline once, with who and the note.
  await page.goto('/');
  await page.getByTestId('waiting-oldest-link').click();
  await expect(page).toHaveURL(new RegExp(`/runs/${oldest}$`));
  const run = new RunPage(page);
  await page.getByTestId('wait-note').fill('signed off');
  await page.getByTestId('wait-approve').click();
  await expect(page.getByTestId('wait-decided')).toContainText(/approved by /);
  await expect(run.action('approve')).toHaveCount(1);
  await expect(run.action('approve')).toContainText('signed off');
  await expect(run.action('approve')).toContainText(`${oldest}/sign-off`);
  await expect(run.events('operator').filter({ hasText: 'approval sign-off approved' })).toHaveCount(0);

  // Decided, it waits no more: the oldest is now another run.
  await page.goto('/');
  await expect(page.getByTestId('waiting-oldest-link')).not.toHaveText(oldest);
  await expect(page.getByTestId('waiting-count-approval')).toHaveText(String(waitingApprovals()));
  for (const id of [oldest, newer, hook]) await waybill(['cancel', id]);
});
