/**
 * Issue 6 on the dashboard: every server action refuses a caller without a session (401), a viewer (403) and
 * a cross-site request (403), and the store is byte-for-byte unchanged after each refusal; pages send
 * strangers to /login; sign-in and sign-out; the size limit; SQL-like search text is just text.
 *
 * Technique: the operator triggers each action from the UI while the browser's request is intercepted and
 * held back (so the action has not happened), then that exact request is replayed without the cookie, with a
 * viewer's, from another origin — and finally with the operator's own cookie, which must work: that proves
 * each refused replay was a real, valid mutation.
 */
import { type BrowserContext, type Page, request as playwrightRequest } from '@playwright/test';
import {
  E2E_OPERATOR_TOKEN,
  E2E_VIEWER_TOKEN,
  type FullStore,
  openSecuredStore,
  orphanClaim,
  readSecured,
  securedURL,
  sessionCookie,
  signIn,
  snapshot,
} from './support/secured';
import { expect, noChromium, test, uniqueId } from './support/test';

test.skip(noChromium, 'no chromium');
test.use({ baseURL: securedURL });

interface Captured {
  url: string;
  headers: Record<string, string>;
  body: Buffer;
}

/** Runs `trigger` and returns the server-action POST it made, which never reaches the server. */
async function capture(page: Page, trigger: () => Promise<void>): Promise<Captured> {
  let captured: Captured | null = null;
  await page.route('**/*', async (route) => {
    const req = route.request();
    if (req.method() === 'POST' && (await req.headerValue('next-action'))) {
      captured ??= { url: req.url(), headers: await req.allHeaders(), body: req.postDataBuffer() ?? Buffer.alloc(0) };
      await route.abort();
    } else {
      await route.continue();
    }
  });
  await trigger();
  await expect.poll(() => captured !== null).toBe(true);
  await page.unrouteAll({ behavior: 'ignoreErrors' });
  return captured!;
}

/** Sends the captured request again from outside the browser, with this cookie (or none) and these headers changed. */
async function replay(c: Captured, cookie: string | null, headers: Record<string, string> = {}): Promise<number> {
  const forwarded = Object.fromEntries(
    Object.entries(c.headers).filter(
      ([k]) => !k.startsWith(':') && !['cookie', 'host', 'content-length', 'connection'].includes(k),
    ),
  );
  const context = await playwrightRequest.newContext();
  try {
    const response = await context.post(c.url, {
      headers: { ...forwarded, ...(cookie ? { cookie } : {}), ...headers },
      data: c.body,
      maxRedirects: 0,
      failOnStatusCode: false,
    });
    return response.status();
  } finally {
    await context.dispose();
  }
}

let store: FullStore;
let viewerCookie: string;

test.beforeAll(async ({ browser }) => {
  store = await openSecuredStore();
  const context = await browser.newContext({ baseURL: securedURL });
  const page = await context.newPage();
  await signIn(page, E2E_VIEWER_TOKEN, { name: 'vera' });
  viewerCookie = await sessionCookie(context);
  await context.close();
});

test.afterAll(async () => {
  await store?.close();
});

const runStatus = (id: string) =>
  readSecured(
    (db) => (db.prepare('SELECT status FROM runs WHERE id = ?').get(id) as { status: string } | undefined)?.status,
  );

/** Signs the page in as olga the operator and returns her session cookie. */
async function asOperator(page: Page, context: BrowserContext): Promise<string> {
  await signIn(page, E2E_OPERATOR_TOKEN, { name: 'olga' });
  return sessionCookie(context);
}

/**
 * The refusals (no session, a viewer, another origin, Origin null, Sec-Fetch-Site cross-site), each leaving
 * every table as it was; then the operator's own replay, which must take effect.
 */
async function refusedThenAccepted(what: string, c: Captured, operatorCookie: string, tookEffect: () => boolean) {
  const before = snapshot();
  expect(await replay(c, null), `${what} without a session`).toBe(401);
  expect(await replay(c, viewerCookie), `${what} as viewer`).toBe(403);
  expect(await replay(c, operatorCookie, { origin: 'http://evil.example' }), `${what} from evil.example`).toBe(403);
  expect(await replay(c, operatorCookie, { origin: 'null' }), `${what} with Origin: null`).toBe(403);
  expect(
    await replay(c, operatorCookie, { 'sec-fetch-site': 'cross-site' }),
    `${what} Sec-Fetch-Site: cross-site`,
  ).toBe(403);
  expect(snapshot(), `${what}: the store after the refusals`).toBe(before);
  expect(tookEffect(), `${what} before the operator's replay`).toBe(false);
  expect(await replay(c, operatorCookie), `${what} as operator`).toBe(200);
  expect(tookEffect(), `${what} after the operator's replay`).toBe(true);
}

/** The audit lines naming these targets (or, for a sweep, mentioning them), oldest first. */
function auditOf(...targets: string[]): { who: string[]; detail: string | null }[] {
  const marks = targets.map(() => '?').join(', ');
  const lines = readSecured((db) =>
    db
      .prepare(`SELECT actor, role, action, target, detail FROM audit
    WHERE target IN (${marks}) OR action = 'sweep' AND (${targets.map(() => 'detail LIKE ?').join(' OR ')}) ORDER BY id`)
      .all(...targets, ...targets.map((t) => `%${t}%`)),
  ) as { actor: string; role: string; action: string; target: string; detail: string | null }[];
  return lines.map((l) => ({ who: [l.actor, l.role, l.action, l.target], detail: l.detail }));
}

const olga = (action: string, target: string) => ['olga (operator)', 'operator', action, target];

test('start: 401 without a session, 403 as viewer, 403 from another origin or Origin null, store unchanged; the operator’s own request works', async ({
  page,
  context,
}) => {
  const operatorCookie = await asOperator(page, context);
  const started = uniqueId('sec-start');
  const start = await capture(page, async () => {
    await page.goto('/runs/new');
    await page.getByTestId('start-workflow').selectOption('agent-batch');
    await page.getByTestId('start-input').fill('{"count": 2, "latencyMs": 10}');
    await page.getByTestId('start-id').fill(started);
    await page.getByTestId('start-submit').click();
  });
  await refusedThenAccepted('start', start, operatorCookie, () => runStatus(started) === 'queued');
  // Audited once, as olga the operator; the refused replays left no line.
  expect(auditOf(started).map((l) => l.who)).toEqual([olga('start', started)]);
});

test('pause, resume, cancel and retry: each refused without a session, as viewer and cross-site, and audited once when the operator does it', async ({
  page,
  context,
}) => {
  const operatorCookie = await asOperator(page, context);
  const runId = uniqueId('sec-run');
  await store.createRun({ id: runId, workflow: 'agent-batch', inputJson: '{"count":2}', totalSteps: 2 });
  for (const [action, after] of [
    ['pause', 'paused'],
    ['resume', 'queued'],
    ['cancel', 'cancelled'],
    ['retry', 'queued'],
  ] as const) {
    const c = await capture(page, async () => {
      await page.goto(`/runs/${encodeURIComponent(runId)}`);
      await page.getByTestId(`action-${action}`).click();
      // Cancel asks first.
      if (action === 'cancel') await page.getByTestId('confirm-submit').click();
    });
    await refusedThenAccepted(action, c, operatorCookie, () => runStatus(runId) === after);
  }
  expect(auditOf(runId).map((l) => l.who)).toEqual(['pause', 'resume', 'cancel', 'retry'].map((a) => olga(a, runId)));
  // The run page's timeline shows its own audit lines.
  await page.goto(`/runs/${encodeURIComponent(runId)}`);
  await expect(page.getByTestId('timeline').getByTestId('audit-entry')).toHaveCount(4);
});

test('expire, resolve and sweep of orphaned claims: each refused without a session, as viewer and cross-site, and audited once when the operator does it', async ({
  page,
  context,
}) => {
  const operatorCookie = await asOperator(page, context);
  const claimRun = uniqueId('sec-claims');
  const [expireKey, resolveKey, sweepKey] = ['expire', 'resolve', 'sweep'].map((k) => `${claimRun}:${k}`) as [
    string,
    string,
    string,
  ];
  const claimGone = (key: string) =>
    readSecured((db) => db.prepare('SELECT 1 FROM claims WHERE idem_key = ?').get(key) === undefined);

  await orphanClaim(store, claimRun, expireKey);
  const expire = await capture(page, async () => {
    await page.goto('/claims');
    await page.getByTestId(`expire-${expireKey}`).click();
    await page.getByTestId('confirm-submit').click();
  });
  await refusedThenAccepted('expire', expire, operatorCookie, () => claimGone(expireKey));

  await orphanClaim(store, claimRun, resolveKey);
  const resolve = await capture(page, async () => {
    await page.goto('/claims');
    await page.getByTestId(`resolve-${resolveKey}`).click();
    await page.getByTestId('resolve-result').fill('{"sent": true}');
    await page.getByTestId('resolve-note').fill('checked the provider');
    await page.getByTestId('resolve-submit').click();
  });
  await refusedThenAccepted('resolve', resolve, operatorCookie, () =>
    readSecured(
      (db) =>
        (
          db.prepare('SELECT source FROM committed WHERE idem_key = ?').get(resolveKey) as
            | { source: string }
            | undefined
        )?.source === 'manual',
    ),
  );

  await orphanClaim(store, claimRun, sweepKey);
  const sweep = await capture(page, async () => {
    await page.goto('/claims');
    await page.getByTestId('sweep-all').click();
    await page.getByTestId('sweep-confirm').click();
  });
  await refusedThenAccepted('sweep', sweep, operatorCookie, () => claimGone(sweepKey));

  const lines = auditOf(expireKey, resolveKey, sweepKey);
  expect(lines.map((l) => l.who)).toEqual([olga('expire', expireKey), olga('resolve', resolveKey), olga('sweep', '*')]);
  expect(lines[1]?.detail).toBe('checked the provider');
  // The audit page lists them.
  await page.goto('/audit');
  await expect(page.getByTestId('audit-table')).toContainText('olga (operator)');
});

test('pages: a stranger is sent to /login and back; a viewer reads but is offered no mutation, and /runs/new is 403', async ({
  page,
  request,
}) => {
  for (const path of ['/', '/claims', '/workers', '/schedules', '/webhooks', '/audit', '/runs/new', '/runs/anything']) {
    const response = await request.get(path, { maxRedirects: 0 });
    expect(response.status(), path).toBe(307);
    expect(response.headers().location, path).toBe(`/login?next=${encodeURIComponent(path)}`);
  }
  // Through the login page, back to where the stranger was going.
  await page.goto('/claims');
  await expect(page).toHaveURL(/\/login\?next=%2Fclaims$/);
  await page.getByTestId('login-token').fill(E2E_VIEWER_TOKEN);
  await page.getByTestId('login-submit').click();
  await expect(page).toHaveURL(`${securedURL}/claims`);
  await expect(page.getByTestId('session-who')).toHaveText('no name');
  await expect(page.getByTestId('session-role')).toHaveText('viewer');

  const runId = uniqueId('sec-viewer');
  await store.createRun({ id: runId, workflow: 'agent-batch', inputJson: '{"count":1}', totalSteps: 1 });
  await orphanClaim(store, runId, `${runId}:0`);
  await page.goto('/claims');
  await expect(page.getByTestId(`claim-orphaned-${runId}:0`)).toBeVisible();
  await expect(page.getByTestId(`expire-${runId}:0`)).toHaveCount(0);
  await expect(page.getByTestId('sweep-all')).toHaveCount(0);
  await page.goto('/');
  await expect(page.getByTestId(`run-row-${runId}`)).toBeVisible();
  await expect(page.getByTestId('bulk-actions')).toHaveCount(0);
  await expect(page.getByTestId(`select-${runId}`)).toHaveCount(0);
  await expect(page.getByTestId('start-run-link')).toHaveCount(0);
  await expect(page.getByTestId('nav-start-a-run')).toHaveCount(0);
  await page.goto(`/runs/${encodeURIComponent(runId)}`);
  await expect(page.getByTestId('run-status')).toHaveText('queued');
  await expect(page.getByRole('group', { name: 'Run actions' })).toHaveCount(0);
  await expect(page.getByTestId('claim-key')).toHaveText(`${runId}:0`);
  await expect(page.getByTestId('claim-expire')).toHaveCount(0);
  await expect(page.getByTestId('claim-resolve')).toHaveCount(0);

  const forbidden = await page.goto('/runs/new');
  expect(forbidden?.status()).toBe(403);
  await expect(page.getByTestId('forbidden')).toBeVisible();
  // An unknown run is a real 404 for a signed-in reader, and a stranger cannot tell (307 either way, above).
  expect((await page.goto('/runs/no-such-run-anywhere'))?.status()).toBe(404);
  await expect(page.getByTestId('run-not-found')).toBeVisible();
});

test('sign-in: a wrong token sets no cookie; the cookie is httpOnly, SameSite=Strict, expiring; next only leads home; sign-out ends it', async ({
  page,
  context,
}) => {
  await page.goto('/login');
  await page.getByTestId('login-token').fill(`${E2E_OPERATOR_TOKEN}x`);
  await page.getByTestId('login-submit').click();
  await expect(page.getByTestId('field-error-token')).toHaveText('not a valid operator or viewer token');
  expect(await context.cookies()).toEqual([]);

  const tooLong = 'n'.repeat(65);
  await page.getByTestId('login-name').evaluate((el, value) => {
    (el as HTMLInputElement).removeAttribute('maxlength');
    (el as HTMLInputElement).value = value;
  }, tooLong);
  await page.getByTestId('login-token').fill(E2E_OPERATOR_TOKEN);
  await page.getByTestId('login-submit').click();
  await expect(page.getByTestId('field-error-name')).toHaveText('at most 64 characters');
  expect(await context.cookies()).toEqual([]);

  const signedAt = Date.now() / 1000;
  await signIn(page, E2E_OPERATOR_TOKEN, { name: 'otto', next: '//evil.example/steal' });
  await expect(page).toHaveURL(`${securedURL}/`);
  await expect(page.getByTestId('session-who')).toHaveText('otto');
  const [cookie] = await context.cookies();
  expect(cookie).toMatchObject({
    name: 'waybill_session',
    httpOnly: true,
    sameSite: 'Strict',
    secure: false,
    path: '/',
  });
  // WAYBILL_SESSION_HOURS defaults to 12.
  expect(cookie!.expires).toBeGreaterThan(signedAt + 12 * 3600 - 60);
  expect(cookie!.expires).toBeLessThan(Date.now() / 1000 + 12 * 3600 + 60);

  await page.getByTestId('session-sign-out').click();
  await expect(page).toHaveURL(`${securedURL}/login`);
  expect(await context.cookies()).toEqual([]);
  await page.goto('/audit');
  await expect(page).toHaveURL(/\/login\?next=%2Faudit$/);
});

test('inputs and results over WAYBILL_MAX_BODY_BYTES get a field error naming the limit, and nothing is written', async ({
  page,
}) => {
  await signIn(page, E2E_OPERATOR_TOKEN);
  const before = snapshot();
  const id = uniqueId('sec-large');
  await page.goto('/runs/new');
  await page.getByTestId('start-workflow').selectOption('agent-batch');
  await page.getByTestId('start-input').fill(JSON.stringify({ count: 1, items: ['x'.repeat(1024 * 1024)] }));
  await page.getByTestId('start-id').fill(id);
  await page.getByTestId('start-submit').click();
  await expect(page.getByTestId('field-error-input')).toContainText(
    'the limit is 1,048,576 bytes (WAYBILL_MAX_BODY_BYTES)',
  );
  expect(snapshot()).toBe(before);
  // Past Next.js's own limit for an action's body (1.25 MiB) the server would answer 413 unread: the form
  // refuses it itself, with the same words, and keeps what was typed.
  const huge = JSON.stringify({ count: 1, items: ['z'.repeat(3 * 1024 * 1024)] });
  await page.getByTestId('start-input').fill(huge);
  await page.getByTestId('start-submit').click();
  await expect(page.getByTestId('field-error-input')).toContainText(
    `is ${(huge.length).toLocaleString('en-US')} bytes: the limit is 1,048,576 bytes (WAYBILL_MAX_BODY_BYTES)`,
  );
  await expect(page.getByTestId('start-form')).toBeVisible();
  expect(await page.getByTestId('start-input').inputValue()).toHaveLength(huge.length);
  expect(snapshot()).toBe(before);

  const runId = uniqueId('sec-large-claim');
  await orphanClaim(store, runId, `${runId}:0`);
  const seeded = snapshot();
  await page.goto('/claims');
  await page.getByTestId(`resolve-${runId}:0`).click();
  await page.getByTestId('resolve-result').fill(JSON.stringify('y'.repeat(1024 * 1024)));
  await page.getByTestId('resolve-submit').click();
  await expect(page.getByTestId('field-error-result')).toContainText(
    'the limit is 1,048,576 bytes (WAYBILL_MAX_BODY_BYTES)',
  );
  expect(snapshot()).toBe(seeded);
});

test('SQL-like text in the search and filters is matched literally', async ({ page }) => {
  const u = uniqueId('sq');
  const workflow = `wf-${u}`;
  const ids = {
    percent: `${u}-50%off`,
    percentLike: `${u}-50xoff`,
    under: `${u}-a_b`,
    underLike: `${u}-axb`,
    backslash: `${u}-back\\slash`,
    backslashLike: `${u}-backxslash`,
    quote: `${u}-it' OR 1=1 --`,
    plain: `${u}-plain`,
  };
  for (const id of Object.values(ids)) await store.createRun({ id, workflow, inputJson: '{}', totalSteps: 1 });
  const total = readSecured((db) => (db.prepare('SELECT count(*) AS n FROM runs').get() as { n: number }).n);
  await signIn(page, E2E_VIEWER_TOKEN);

  const shown = async (q: string | null, wf = workflow): Promise<string[]> => {
    const params = new URLSearchParams({ workflow: wf });
    if (q !== null) params.set('q', q);
    await page.goto(`/?${params}`);
    await expect(page.getByTestId('runs-table').or(page.getByTestId('runs-no-match'))).toBeVisible();
    const rows = await page
      .locator('[data-testid^="run-row-"]')
      .evaluateAll((els) => els.map((e) => e.getAttribute('data-testid')!.slice('run-row-'.length)));
    return rows.sort();
  };

  expect(await shown(null)).toEqual(Object.values(ids).sort());
  expect(await shown('%')).toEqual([ids.percent]);
  expect(await shown('50%')).toEqual([ids.percent]);
  expect(await shown('_')).toEqual([ids.under]);
  expect(await shown('\\')).toEqual([ids.backslash]);
  expect(await shown("' OR 1=1 --")).toEqual([ids.quote]);
  expect(await shown("'; DROP TABLE runs; --")).toEqual([]);
  expect(await shown('" OR ""="')).toEqual([]);
  expect(await shown(null, "' OR 1=1 --")).toEqual([]);
  expect(await shown(null, '%')).toEqual([]);
  expect(readSecured((db) => (db.prepare('SELECT count(*) AS n FROM runs').get() as { n: number }).n)).toBe(total);
});
