/**
 * Issue 11, item 16: PostgreSQL gone under a running dashboard. The dashboard (npm start's web cluster, one
 * process) runs on a real PostgreSQL schema through a TCP gate; the gate is cut. The API answers 503
 * STORE_UNAVAILABLE with Retry-After, pages answer 503 with a page that says the store is unavailable, the
 * server's log is one JSON line per entry, and once the gate opens everything answers 200 again, no restart.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { createSchema, type PgProxy, startPgProxy, TEST_DATABASE_URL, type TestSchema } from '../test/support/postgres';
import { expect, noChromium, test } from './support/test';

test.skip(noChromium, 'no chromium');

const ROOT = fileURLToPath(new URL('..', import.meta.url));
// The suite's servers use the port and the next one; this spec's own server, the one after.
const PORT = Number(process.env.WAYBILL_E2E_PORT ?? 3210) + 2;
const BASE = `http://127.0.0.1:${PORT}`;

let schema: string;
let own: TestSchema | undefined;
let gate: PgProxy;
let server: ChildProcess;
const webLines: string[] = [];

test.beforeAll(async () => {
  test.setTimeout(180_000);
  own = await createSchema('wb_outage');
  schema = own.name;
  await own.admin.query(`CREATE SCHEMA ${schema}`);
  gate = await startPgProxy(TEST_DATABASE_URL);
  const url = new URL(gate.url);
  url.searchParams.set('schema', schema);
  server = spawn(process.execPath, ['bin/start.mjs', '--no-worker', '--no-demo'], {
    cwd: ROOT,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: {
      ...process.env,
      DATABASE_URL: url.toString(),
      PORT: String(PORT),
      HOST: '127.0.0.1',
      WAYBILL_WEB_PROCESSES: '1',
      NEXT_TELEMETRY_DISABLED: '1',
    },
  });
  let pending = '';
  const collect = (chunk: Buffer) => {
    pending += chunk.toString('utf8');
    const lines = pending.split('\n');
    pending = lines.pop()!;
    webLines.push(...lines.filter((l) => l.startsWith('[web] ')).map((l) => l.slice('[web] '.length)));
  };
  server.stderr!.on('data', collect);
  await new Promise<void>((resolve, reject) => {
    let out = '';
    server.stdout!.on('data', (c: Buffer) => {
      out += c.toString('utf8');
      collect(c);
      if (out.includes('Waybill is running at')) resolve();
    });
    server.on('exit', (code) =>
      reject(new Error(`the dashboard exited (${code}) before it was up: ${webLines.join('\n')}`)),
    );
  });
});

test.afterAll(async () => {
  if (server?.pid) {
    try {
      process.kill(-server.pid, 'SIGTERM');
    } catch {
      /* already gone */
    }
    await new Promise((resolve) => server.once('exit', resolve));
  }
  await gate?.close();
  await own?.drop().catch(() => undefined);
});

// No tokens on this server (loopback): pages and API are open, as on a laptop.
const auth = {};

test('PostgreSQL unreachable: the API answers 503 STORE_UNAVAILABLE with Retry-After, pages a 503 that says so; back to 200 without a restart', async ({
  page,
  request,
}) => {
  test.setTimeout(180_000);
  await own!.admin.query(
    `INSERT INTO ${schema}.progress(run_id, step, state_json, updated_at) VALUES ('outage-run', 1, '{}', extract(epoch from now()))`,
  );
  expect((await request.get(`${BASE}/api/v1/runs`, { headers: auth })).status()).toBe(200);
  expect((await page.goto(`${BASE}/`))!.status()).toBe(200);
  const linesBefore = webLines.length;

  gate.cut();
  // The API: every endpoint that reads the store.
  for (const path of [
    '/api/v1/runs',
    '/api/v1/runs/outage-run',
    '/api/v1/claims',
    '/api/v1/runs/outage-run/committed',
  ]) {
    const response = await request.get(`${BASE}${path}`, { headers: auth });
    expect(response.status(), path).toBe(503);
    expect(response.headers()['retry-after'], path).toBe('1');
    expect((await response.json()).error, path).toEqual({
      code: 'STORE_UNAVAILABLE',
      message: 'the store is busy or unreachable; retry shortly',
    });
  }
  // A mutation too: refused the same way, not a 500.
  const cancel = await request.post(`${BASE}/api/v1/runs/outage-run/cancel`, { headers: auth, data: {} });
  expect(cancel.status()).toBe(503);

  // Pages: the store is known to be down, so each page is a 503 with the page that says so.
  for (const path of ['/', '/runs/outage-run', '/claims', '/workers', '/audit']) {
    const response = await page.goto(`${BASE}${path}`);
    expect(response!.status(), path).toBe(503);
    expect(response!.headers()['retry-after'], path).toBe('2');
    await expect(page.getByTestId('store-unavailable'), path).toContainText('The store is unavailable');
  }

  // Every line the web process logged meanwhile is one JSON object, errors included, and none is a dump.
  const during = webLines.slice(linesBefore).filter((l) => l.trim() !== '');
  expect(during.length).toBeGreaterThan(0);
  for (const line of during) expect(() => JSON.parse(line), line).not.toThrow();
  const entries = during.map((l) => JSON.parse(l) as { level: string; msg: string; component?: string });
  expect(entries.filter((e) => e.msg === 'api: store unavailable').length).toBeGreaterThanOrEqual(5);
  expect(entries.every((e) => e.component === 'web')).toBe(true);

  gate.open();
  // The proxy looks at the store again at most once a second; the page reloads itself until it answers.
  await expect
    .poll(async () => (await request.get(`${BASE}/`, { headers: auth, maxRedirects: 0 })).status(), { timeout: 30_000 })
    .toBe(200);
  expect((await request.get(`${BASE}/api/v1/runs/outage-run`, { headers: auth })).status()).toBe(200);
  const back = await page.goto(`${BASE}/runs/outage-run`);
  expect(back!.status()).toBe(200);
  await expect(page.getByTestId('store-unavailable')).toHaveCount(0);
});

test('the first page to meet the outage renders the store-unavailable state, not the generic error, and logs one JSON line', async ({
  page,
  request,
}) => {
  test.setTimeout(180_000);
  // Nothing has marked the store down yet: the page itself meets the outage while rendering.
  await expect
    .poll(async () => (await request.get(`${BASE}/claims`, { headers: auth })).status(), { timeout: 30_000 })
    .toBe(200);
  const linesBefore = webLines.length;
  gate.cut();
  try {
    const response = await page.goto(`${BASE}/claims`);
    // Streamed: the status was sent before the store failed; the state on screen is the store's.
    expect([200, 503]).toContain(response!.status());
    await expect(page.getByTestId('store-unavailable')).toBeVisible();
    await expect(page.getByTestId('error-boundary')).toHaveCount(0);
    const during = webLines.slice(linesBefore).filter((l) => l.trim() !== '');
    console.log(`first page in the outage: ${response!.status()}; logged:\n${during.join('\n')}`);
    for (const line of during) expect(() => JSON.parse(line), line).not.toThrow();
    // Next's own report of the failed render is among them, as one line carrying the digest the page showed.
    expect(
      during.map((l) => JSON.parse(l) as { digest?: string }).some((e) => e.digest === 'WAYBILL_STORE_UNAVAILABLE'),
    ).toBe(true);
  } finally {
    gate.open();
  }
});
