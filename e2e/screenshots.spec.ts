/**
 * Issue 5, item 6 (d): every page, reached through the navigation where there is a link, checked for its
 * main element and saved as a full-page screenshot (attached to the report and in test-results/screenshots).
 */
import { mkdirSync } from 'node:fs';
import type { Page, TestInfo } from '@playwright/test';
import { ClaimsPage } from './pages/claims-page';
import { RunPage } from './pages/run-page';
import { RunsPage } from './pages/runs-page';
import { StartRunPage } from './pages/start-run-page';
import { WorkersPage } from './pages/workers-page';
import { expect, noChromium, test, uniqueId } from './support/test';
import { queueRun, readDb, startWorker } from './support/waybill';

test.skip(noChromium, 'no chromium');

const DIR = 'test-results/screenshots';

async function shoot(page: Page, testInfo: TestInfo, name: string): Promise<void> {
  mkdirSync(DIR, { recursive: true });
  const path = `${DIR}/${name}.png`;
  await page.screenshot({ path, fullPage: true });
  await testInfo.attach(name, { path, contentType: 'image/png' });
}

test('a screenshot of every page', async ({ page }, testInfo) => {
  // A finished run and a stopped worker, so the run, runs and workers pages have something to show.
  const runId = uniqueId('e2e-shots');
  const workerId = uniqueId('e2e-shots-worker');
  await queueRun(runId, 'agent-batch', { count: 12, latencyMs: 40 });
  const worker = await startWorker(workerId);
  await expect
    .poll(
      () =>
        readDb((db) => (db.prepare('SELECT status FROM runs WHERE id = ?').get(runId) as { status: string }).status),
      { timeout: 30_000 },
    )
    .toBe('completed');
  await worker.stop();

  const runs = new RunsPage(page);
  await runs.goto();
  await expect(runs.table).toBeVisible();
  await expect(runs.row(runId)).toBeVisible();
  await expect(runs.status(runId)).toHaveText(/completed/i);
  await shoot(page, testInfo, 'runs');

  await runs.nav('start-a-run').click();
  await expect(page).toHaveURL(/\/runs\/new$/);
  const form = new StartRunPage(page);
  await expect(form.submit).toBeVisible();
  await expect(form.input).not.toBeEmpty();
  await shoot(page, testInfo, 'start-a-run');

  await runs.nav('runs').click();
  await runs.row(runId).getByRole('link', { name: runId }).first().click();
  await expect(page).toHaveURL(new RegExp(`/runs/${runId}$`));
  const run = new RunPage(page);
  await expect(run.status).toHaveText(/completed/i);
  await expect(page.getByTestId('chart-durations')).toBeVisible();
  await expect(page.getByTestId('chart-cumulative')).toBeVisible();
  await expect(run.committed).toBeVisible();
  await expect(run.timeline).toBeVisible();
  await shoot(page, testInfo, 'run');

  await runs.nav('claims').click();
  await expect(page).toHaveURL(/\/claims$/);
  await expect(new ClaimsPage(page).sweepAll).toBeVisible();
  await shoot(page, testInfo, 'claims');

  await runs.nav('workers').click();
  await expect(page).toHaveURL(/\/workers$/);
  const workers = new WorkersPage(page);
  await expect(workers.table).toBeVisible();
  await expect(workers.row(workerId)).toBeVisible();
  await expect(workers.state(workerId)).toHaveText(/stopped/i);
  await shoot(page, testInfo, 'workers');

  // A real 404: the run page decides that the run exists before it starts streaming.
  const unknownRun = await page.goto('/runs/no-such-run-anywhere');
  expect(unknownRun?.status()).toBe(404);
  await expect(run.notFound).toBeVisible();
  await shoot(page, testInfo, 'run-not-found');

  const unknownPage = await page.goto('/no-such-page');
  expect(unknownPage?.status()).toBe(404);
  await shoot(page, testInfo, 'not-found');
});
