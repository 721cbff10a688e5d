/**
 * Issue 6: markup in anything stored — run ids, workflow names, inputs, results, keys, error messages,
 * progress state, timeline details, worker ids, operators' notes and display names — is shown as text on
 * every page: no dialog opens, no injected script sets window.__xss, no injected element exists, and the
 * payload reads literally. Seeded through the store API on the secured server's database, and through the UI
 * (a display name, a resolve note).
 */
import type { Page } from '@playwright/test';
import { E2E_OPERATOR_TOKEN, openSecuredStore, orphanClaim, securedURL } from './support/secured';
import { expect, noChromium, test, uniqueId } from './support/test';

test.skip(noChromium, 'no chromium');
test.use({ baseURL: securedURL });

const IMG = '<img src=x onerror="window.__xss=1;alert(1)">';
const SCRIPT = '<script>window.__xss=1;alert(2)</script>';
const SVG = '"><svg onload="window.__xss=1;alert(3)">';
const JS = 'javascript:window.__xss=1;alert(4)';
/** ≤ 64 characters: a display name. */
const NAME = '<img src=x onerror="window.__xss=1;alert(5)">';

/** What must be true on every page: nothing ran, nothing was injected. */
async function inert(page: Page, dialogs: string[], where: string) {
  expect(dialogs, `${where}: dialogs`).toEqual([]);
  expect(
    await page.evaluate(() => (window as unknown as { __xss?: unknown }).__xss),
    `${where}: window.__xss`,
  ).toBeUndefined();
  await expect(
    page.locator('img[onerror], svg[onload], [onload], [onerror], iframe, a[href^="javascript:"]'),
    `${where}: injected elements`,
  ).toHaveCount(0);
}

test('stored markup is text on every page: no dialog, no script, shown literally', async ({ page }) => {
  const dialogs: string[] = [];
  page.on('dialog', (dialog) => {
    dialogs.push(dialog.message());
    void dialog.dismiss();
  });

  const u = uniqueId('xss');
  const runImg = `${u}-${IMG}`;
  const runSvg = `${u}-${SVG}`;
  const runJs = `${JS};${u}`;
  const workerId = `${u}-w-${IMG}`;
  const committedKey = `${u}:${SVG}:0`;
  const doubtKey = `${u}:${IMG}:1`;

  const store = await openSecuredStore();
  try {
    await store.createRun({
      id: runImg,
      workflow: `wf${SVG}`,
      inputJson: JSON.stringify({ html: IMG, script: SCRIPT, link: JS }),
      totalSteps: 3,
    });
    await store.createRun({ id: runJs, workflow: 'agent-batch', inputJson: '{}', totalSteps: 1 });
    // A failed run whose error is markup, failed by a worker whose id and host are markup.
    const failing = `wf-${u}-fail`;
    await store.createRun({ id: runSvg, workflow: failing, inputJson: '{}', totalSteps: 1 });
    await store.registerWorker({ id: workerId, host: SVG, pid: 424242 });
    expect(await store.claimRun({ workerId, leaseMs: 60_000, workflows: [failing] })).toMatchObject({ id: runSvg });
    expect(await store.finishRun(runSvg, workerId, { status: 'failed', error: `${SCRIPT} ${IMG}` })).toBe(true);
    // A committed result and a saved state that are markup, an event detail, and a claim in doubt.
    const claim = await store.claim({
      idemKey: committedKey,
      runId: runImg,
      token: `t-${u}`,
      workerId,
      step: 0,
      attempt: 1,
      leaseMs: 60_000,
      claimTtlMs: 30_000,
    });
    expect(claim.kind).toBe('claimed');
    await store.commit({
      idemKey: committedKey,
      token: `t-${u}`,
      runId: runImg,
      resultJson: JSON.stringify({ html: IMG, script: SCRIPT, svg: SVG }),
      step: 0,
      fingerprint: null,
      workerId,
      durationMs: 5,
      progress: {
        runId: runImg,
        step: 1,
        stateJson: JSON.stringify({ last: SCRIPT }),
        executed: 1,
        skipped: 0,
        awaited: 0,
      },
    });
    await store.recordEvent({ runId: runImg, outcome: 'operator', detail: `note ${SCRIPT}` });
    await orphanClaim(store, runImg, doubtKey);
  } finally {
    await store.close();
  }

  // A display name that is markup, and a `next` that is a javascript: URL: sign-in lands on the runs list.
  await page.goto(`/login?next=${encodeURIComponent(JS)}`);
  await page.getByTestId('login-token').fill(E2E_OPERATOR_TOKEN);
  await page.getByTestId('login-name').fill(NAME);
  await page.getByTestId('login-submit').click();
  await expect(page).toHaveURL(`${securedURL}/`);
  await expect(page.getByTestId('session-who')).toHaveText(NAME);
  await inert(page, dialogs, 'runs list');
  await expect(page.getByTestId(`run-link-${runImg}`)).toHaveText(runImg);
  await expect(page.getByTestId(`run-link-${runSvg}`)).toHaveText(runSvg);
  await expect(page.getByTestId(`run-row-${runImg}`)).toContainText(`wf${SVG}`);
  await expect(page.getByTestId(`run-row-${runSvg}`)).toContainText(`${SCRIPT} ${IMG}`);

  // The search box echoes markup back as its value.
  await page.goto(`/?q=${encodeURIComponent(IMG)}`);
  await expect(page.getByTestId(`run-link-${runImg}`)).toHaveText(runImg);
  await expect(page.getByTestId('search')).toHaveValue(IMG);
  await inert(page, dialogs, 'runs search');

  // A run id that is a javascript: URL is an ordinary link to its page.
  await page.goto(`/?q=${encodeURIComponent(u)}`);
  await page.getByTestId(`run-link-${runJs}`).click();
  await expect(page.getByTestId('run-id')).toHaveText(runJs);
  await inert(page, dialogs, 'javascript: run');

  // Resolve the claim in doubt with a note that is markup, through the claims page.
  await page.goto('/claims');
  await expect(page.getByTestId(`claim-row-${doubtKey}`)).toContainText(doubtKey);
  await expect(page.getByTestId(`claim-row-${doubtKey}`)).toContainText(runImg);
  await inert(page, dialogs, 'claims');
  await page.getByTestId(`resolve-${doubtKey}`).click();
  await page.getByTestId('resolve-result').fill(JSON.stringify({ html: IMG }));
  await page.getByTestId('resolve-note').fill(`${SCRIPT}${SVG}`);
  await page.getByTestId('resolve-submit').click();
  await expect(page.getByTestId('claim-message')).toHaveText(`resolved ${doubtKey} by hand`);
  await inert(page, dialogs, 'claims after resolve');

  await page.goto(`/runs/${encodeURIComponent(runImg)}`);
  await expect(page.getByTestId('run-id')).toHaveText(runImg);
  await expect(page.getByTestId('run-workflow')).toHaveText(`wf${SVG}`);
  const timeline = page.getByTestId('timeline');
  await expect(timeline).toContainText(`note ${SCRIPT}`);
  await expect(timeline.getByTestId('audit-entry-who')).toHaveText(`${NAME} (operator)`);
  await expect(timeline.getByTestId('audit-entry-detail')).toHaveText(`${SCRIPT}${SVG}`);
  await expect(page.getByTestId('committed-table')).toContainText(committedKey);
  await expect(page.getByTestId('committed-table')).toContainText(doubtKey);
  // JSON values are shown as JSON: the markup with its quotes escaped, every other character as it was.
  await page.getByTestId('run-input').locator('summary').first().click();
  await expect(page.getByTestId('run-input')).toContainText(JSON.stringify(SCRIPT));
  await page.getByTestId('run-state').locator('summary').first().click();
  await expect(page.getByTestId('run-state')).toContainText(JSON.stringify(SCRIPT));
  await inert(page, dialogs, 'run page');

  await page.goto(`/runs/${encodeURIComponent(runImg)}?q=${encodeURIComponent(SVG)}`);
  await expect(page.getByTestId('committed-search')).toHaveValue(SVG);
  await expect(page.getByTestId('committed-table')).toContainText(committedKey);
  await inert(page, dialogs, 'run page search');

  await page.goto(`/runs/${encodeURIComponent(runSvg)}`);
  await expect(page.getByTestId('run-id')).toHaveText(runSvg);
  await expect(page.getByTestId('run-error')).toContainText(`${SCRIPT} ${IMG}`);
  await inert(page, dialogs, 'failed run page');

  await page.goto('/workers');
  await expect(page.getByTestId(`worker-row-${workerId}`)).toContainText(workerId);
  await expect(page.getByTestId(`worker-row-${workerId}`)).toContainText(SVG);
  await inert(page, dialogs, 'workers');

  await page.goto('/audit');
  const resolved = page
    .locator('tr', { has: page.getByTestId('audit-action').getByText('resolve', { exact: true }) })
    .filter({ hasText: doubtKey });
  await expect(resolved.getByTestId('audit-who')).toHaveText(`${NAME} (operator)`);
  await expect(resolved.getByTestId('audit-detail')).toHaveText(`${SCRIPT}${SVG}`);
  await expect(resolved.getByTestId('audit-target')).toContainText(doubtKey);
  await inert(page, dialogs, 'audit');

  // Unknown-page and not-found texts do not echo the URL as markup either.
  await page.goto(`/runs/${encodeURIComponent(`${u}-missing-${IMG}`)}`);
  await expect(page.getByTestId('run-not-found')).toBeVisible();
  await inert(page, dialogs, 'run not found');
});
