/**
 * Issue 11, items 18 and 21: what a newcomer sees around the pages. The current section is marked, every
 * page has a favicon, the runs page is titled like the others, the header names the person once, the run
 * header gives absolute times, and a live refresh does not re-send every link's prefetch.
 */
import Database from 'better-sqlite3';
import type { AuditStore, RunStore, Store } from '../lib/store/contract';
import { openStore } from '../lib/store/index';
import { RunPage } from './pages/run-page';
import { RunsPage } from './pages/runs-page';
import { E2E_VIEWER_TOKEN, securedURL, signIn } from './support/secured';
import { expect, noChromium, test, uniqueId } from './support/test';
import { databaseUrl } from './support/waybill';

test.skip(noChromium, 'no chromium');

test('the navigation marks the current section', async ({ page }) => {
  const runs = new RunsPage(page);
  const current = page.locator('nav[aria-label="Main"] [aria-current="page"]');
  const cases: [string, string][] = [
    ['/', 'nav-runs'],
    ['/claims', 'nav-claims'],
    ['/workers', 'nav-workers'],
    ['/schedules', 'nav-schedules'],
    ['/audit', 'nav-audit'],
    ['/runs/new', 'nav-start-a-run'],
    ['/runs/no-such-run-here', 'nav-runs'],
  ];
  for (const [path, testId] of cases) {
    await page.goto(path);
    await expect(current, path).toHaveCount(1);
    await expect(current, path).toHaveAttribute('data-testid', testId);
  }
  await runs.goto();
  await runs.nav('claims').click();
  await expect(page).toHaveURL(/\/claims$/);
  await expect(runs.nav('claims')).toHaveAttribute('aria-current', 'page');
  await expect(runs.nav('runs')).not.toHaveAttribute('aria-current', 'page');
});

test('every page has a favicon, and the runs page is titled like the rest', async ({ page, request }) => {
  const failed: string[] = [];
  page.on('response', (response) => {
    if (/favicon|icon/.test(new URL(response.url()).pathname) && response.status() >= 400)
      failed.push(`${response.status()} ${response.url()}`);
  });
  for (const path of ['/', '/claims', '/workers', '/schedules', '/audit']) {
    await page.goto(path);
    const href = await page.locator('link[rel="icon"]').first().getAttribute('href');
    expect(href, path).toBeTruthy();
    expect((await request.get(href!)).status(), href!).toBe(200);
  }
  expect((await request.get('/favicon.ico')).status()).toBe(200);
  expect(failed).toEqual([]);

  await page.goto('/');
  await expect(page).toHaveTitle('Runs · Waybill');
  await page.goto('/claims');
  await expect(page).toHaveTitle('Claims · Waybill');
});

test('the header names a signed-in person once, beside their role', async ({ page }) => {
  await signIn(page, E2E_VIEWER_TOKEN, { name: 'vera' });
  await page.goto(`${securedURL}/`);
  await expect(page.getByTestId('session-who')).toHaveText('vera');
  await expect(page.getByTestId('session-role')).toHaveText('viewer');
  const corner = ((await page.getByTestId('session-who').locator('xpath=..').textContent()) ?? '').replace(/\s+/g, ' ');
  expect(corner.match(/viewer/g) ?? [], corner).toHaveLength(1);
  expect(corner).not.toContain('vera (viewer)');
});

test('the run header gives absolute start and end times and the duration', async ({ page }) => {
  const runId = uniqueId('e2e-times');
  const store = (await openStore(databaseUrl(), { synchronous: 'normal' })) as Store & RunStore;
  try {
    await store.createRun({ id: runId, workflow: 'agent-batch', inputJson: '{"count":1}', totalSteps: 1 });
  } finally {
    await store.close();
  }
  const run = new RunPage(page);
  await run.goto(runId);
  await expect(page.getByTestId('run-started')).toHaveText('not yet');
  await expect(page.getByTestId('run-finished')).toHaveText('—');
  await expect(page.getByTestId('run-duration')).toHaveText('—');
  await expect(page.getByTestId('run-updated')).toHaveText(/\d+s ago|in \d+s/);
  // Cancelled from the page: it has ended, so the duration is fixed.
  await page.getByTestId('action-cancel').click();
  await page.getByTestId('confirm-submit').click();
  await expect(run.status).toHaveText(/cancelled/);
});

test("the run header's Updated follows the run's progress, not only its row", async ({ page }) => {
  const runId = uniqueId('e2e-updated');
  const store = (await openStore(databaseUrl(), { synchronous: 'normal' })) as Store & RunStore;
  try {
    await store.createRun({ id: runId, workflow: 'agent-batch', inputJson: '{"count":5}', totalSteps: 5 });
  } finally {
    await store.close();
  }
  // The run row last written an hour ago; a step's commit saves progress (just now) and leaves the row alone.
  const db = new Database(databaseUrl().slice('file:'.length));
  try {
    db.prepare('UPDATE runs SET updated_at = ? WHERE id = ?').run(Date.now() / 1000 - 3600, runId);
  } finally {
    db.close();
  }
  const again = (await openStore(databaseUrl(), { synchronous: 'normal' })) as Store & RunStore;
  try {
    await again.saveProgress({ runId, step: 2, stateJson: '{}', executed: 2, skipped: 0, awaited: 0 });
  } finally {
    await again.close();
  }
  await new RunPage(page).goto(runId);
  await expect(page.getByTestId('run-updated')).toHaveText(/^(\d+s ago|in \d+s)$/);
});

test('a live refresh re-sends no link prefetch: counted over five refreshes of a page of fifty runs', async ({
  page,
}) => {
  const prefix = uniqueId('e2e-prefetch');
  const store = (await openStore(databaseUrl(), { synchronous: 'normal' })) as Store & RunStore & AuditStore;
  try {
    for (let i = 0; i < 50; i++)
      await store.createRun({ id: `${prefix}-${i}`, workflow: 'agent-batch', inputJson: '{"count":1}', totalSteps: 1 });
    await store.recordAudit({
      actor: 'e2e',
      role: 'local',
      action: 'start',
      target: `${prefix}-0`,
      runId: `${prefix}-0`,
      detail: null,
    });
  } finally {
    await store.close();
  }
  let refreshes = 0;
  let prefetches = 0;
  let counting = false;
  page.on('request', (request) => {
    const headers = request.headers();
    if (!counting || headers.rsc !== '1') return;
    if (headers['next-router-prefetch'] || headers['next-router-segment-prefetch']) prefetches++;
    else if (new URL(request.url()).pathname === '/') refreshes++;
  });

  // The counter counts prefetches: /audit (which does not refresh itself) keeps its links' prefetch.
  counting = true;
  await page.goto('/audit');
  await expect(page.getByTestId('audit-table')).toBeVisible();
  await expect
    .poll(() => prefetches, { timeout: 30_000, message: 'a default <Link> in view is prefetched' })
    .toBeGreaterThan(0);
  counting = false;
  prefetches = 0;
  const runs = new RunsPage(page);
  await runs.goto();
  await expect(page.getByTestId(`run-row-${prefix}-49`)).toBeVisible();
  // What the first render prefetches is not the question; what each refresh costs is.
  await page.waitForLoadState('networkidle');
  counting = true;
  await expect.poll(() => refreshes, { timeout: 60_000 }).toBeGreaterThanOrEqual(5);
  counting = false;
  // Before the fix each refresh re-sent one prefetch per link in view: 50 rows, 7 cards, the navigation.
  expect(prefetches, `${prefetches} prefetches over ${refreshes} refreshes`).toBe(0);
});
