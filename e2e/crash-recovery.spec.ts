/**
 * Issue 5, item 6 (a): the article's promise in a browser. A run started from the form advances on a real
 * worker; the worker is SIGKILLed mid-step; its claim shows as orphaned on /claims once its 7.5 s lease passes;
 * the operator expires it; a new worker finishes the run, and every step is committed exactly once.
 */
import { ClaimsPage } from './pages/claims-page';
import { RunPage } from './pages/run-page';
import { StartRunPage } from './pages/start-run-page';
import { expect, noChromium, test, uniqueId } from './support/test';
import { killMidStep, readDb, startWorker } from './support/waybill';

test.skip(noChromium, 'no chromium');

const STEPS = 40;

test('a worker killed mid-step: orphaned claim, expired by hand, run completed by a new worker', async ({ page }) => {
  const runId = uniqueId('e2e-crash');
  const first = await startWorker(uniqueId('e2e-first'));

  const form = new StartRunPage(page);
  await form.goto();
  await form.start({ workflow: 'agent-batch', input: JSON.stringify({ count: STEPS, latencyMs: 300 }), id: runId });
  await expect(page).toHaveURL(new RegExp(`/runs/${runId}$`));

  const run = new RunPage(page);
  await expect(run.status).toBeVisible();
  // The page refreshes itself: the bar moves while we watch, without a reload.
  const seen = await run.stepsDone();
  await expect.poll(() => run.stepsDone(), { timeout: 30_000 }).toBeGreaterThan(Math.max(seen, 2));

  const key = await killMidStep(first, runId);
  const killedAt = await run.stepsDone();
  expect(killedAt).toBeLessThan(STEPS);

  const claims = new ClaimsPage(page);
  await claims.goto();
  await expect(claims.row(key)).toBeVisible();
  // Orphaned once the dead worker's 7.5 s lease has passed; the page notices on its own refresh.
  await expect(claims.orphaned(key)).toBeVisible({ timeout: 20_000 });
  await claims.expire(key);
  await expect(claims.message).toContainText(/expired/i);
  await expect(claims.row(key)).toHaveCount(0);

  const second = await startWorker(uniqueId('e2e-second'));
  await run.goto(runId);
  await expect(run.status).toHaveText(/completed/i, { timeout: 60_000 });
  await expect(run.skipped).toBeVisible();
  await expect(run.skipped).toHaveText(/\d/);
  await expect(run.action('expire')).toHaveCount(1);
  await expect.poll(() => run.stepsDone()).toBe(STEPS);

  // The cargo never duplicates: one committed row per step, the expired one included.
  const committed = readDb((db) =>
    db.prepare('SELECT count(*) AS n, count(DISTINCT idem_key) AS keys FROM committed WHERE run_id = ?').get(runId),
  ) as { n: number; keys: number };
  expect(committed).toEqual({ n: STEPS, keys: STEPS });
  await second.stop();
});
