/**
 * Issue 5, item 6 (b): an orphaned claim resolved by hand on /claims. The operator's result is committed
 * (marked manual, shown on the run page) and the resolution is in the run's timeline.
 */
import { ClaimsPage } from './pages/claims-page';
import { RunPage } from './pages/run-page';
import { expect, noChromium, test, uniqueId } from './support/test';
import { claimsOf, queueRun, readDb, startWorker } from './support/waybill';

test.skip(noChromium, 'no chromium');

test('an orphaned claim resolved by hand shows as a manual result and a resolved event', async ({ page }) => {
  const runId = uniqueId('e2e-resolve');
  // Each step takes 20 s: the worker is certainly mid-step when it is killed.
  await queueRun(runId, 'agent-batch', { count: 3, latencyMs: 20_000 });
  const worker = await startWorker(uniqueId('e2e-doomed'));
  await expect.poll(() => claimsOf(runId), { timeout: 20_000 }).toHaveLength(1);
  const [key] = claimsOf(runId);
  await worker.killHard();

  const claims = new ClaimsPage(page);
  await claims.goto();
  await expect(claims.orphaned(key!)).toBeVisible({ timeout: 20_000 });

  // A result that is not JSON is refused inline, and nothing is committed.
  await claims.resolve(key!, '{"sent": tru');
  await expect(claims.row(key!).getByTestId('field-error-result')).toBeVisible();
  expect(
    readDb((db) => db.prepare('SELECT count(*) AS n FROM committed WHERE idem_key = ?').get(key!)) as { n: number },
  ).toEqual({ n: 0 });

  const row = claims.row(key!);
  await row.getByTestId('resolve-result').fill('{"summary": "checked with the provider by hand"}');
  await row.getByTestId('resolve-note').fill('e2e: the provider says it was sent');
  await row.getByTestId('resolve-submit').click();
  await expect(claims.message).toContainText(/resolved/i);
  await expect(claims.row(key!)).toHaveCount(0);

  const run = new RunPage(page);
  await run.goto(runId);
  await expect(run.manualResults).toHaveCount(1);
  await expect(run.manualResults).toBeVisible();
  // Once: the audit line (who, the note) stands for the store's resolved event too.
  await expect(run.events('resolved')).toHaveCount(0);
  const resolved = run.action('resolve');
  await expect(resolved).toHaveCount(1);
  await expect(resolved).toContainText('e2e: the provider says it was sent');

  const stored = readDb((db) =>
    db.prepare('SELECT source, result_json FROM committed WHERE idem_key = ?').get(key!),
  ) as { source: string; result_json: string };
  expect(stored.source).toBe('manual');
  expect(JSON.parse(stored.result_json)).toEqual({ summary: 'checked with the provider by hand' });
});
