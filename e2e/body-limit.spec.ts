/**
 * WAYBILL_MAX_BODY_BYTES as the dashboard's actions take it, read when the dashboard starts, on the production
 * build served both ways bin/web.mjs serves it (the guard, lib/launch/http-guard.mjs, preloaded): `next start`,
 * as `npm start` runs a checkout, and Next's standalone server.js, as `waybill dashboard` runs the
 * waybill-dashboard package, whose next.config was fixed when it was built. Raised to 4 MiB, a 2 MiB result
 * resolved through the claims page's form is committed; a body more than a quarter above the limit is refused
 * 413 and its connection closed, whether it declares its length or is sent chunked, before its body has ended.
 * At the default limit the form refuses the 2 MiB itself and the server refuses them as before.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Page } from '@playwright/test';
import Database from 'better-sqlite3';
import { openStore } from '../lib/store/index';
import { ClaimsPage } from './pages/claims-page';
import { type FullStore, orphanClaim } from './support/secured';
import { expect, noChromium, test } from './support/test';

test.skip(noChromium, 'no chromium: the suite made no production build');

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const WEB = join(ROOT, 'bin', 'web.mjs');
// The suite's servers hold the port and the next one, npm start's spec the one after, the cluster's the next.
const PORT = Number(process.env.WAYBILL_E2E_PORT ?? 3210) + 4;
const BASE = `http://127.0.0.1:${PORT}`;
const MiB = 1024 * 1024;

type Serving = 'next start' | 'standalone';

interface Dashboard {
  databaseUrl: string;
  output: () => string;
}

const running = new Map<ChildProcess, () => string>();
const dirs: string[] = [];
test.afterEach(async ({ page }) => {
  // The claims page's live refresh keeps a connection busy, which next start's graceful stop would wait for.
  await page.close();
  const stuck: string[] = [];
  for (const [proc, output] of running) {
    const closed = once(proc, 'close');
    proc.kill('SIGTERM');
    // A refused body's request left in hand would hold the dashboard's graceful stop.
    const stopped = await Promise.race([closed.then(() => true), new Promise((r) => setTimeout(r, 20_000, false))]);
    if (!stopped) {
      stuck.push(output());
      proc.kill('SIGKILL');
      await closed;
    }
  }
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  expect(stuck, 'the dashboard did not stop on SIGTERM within 20 s').toEqual([]);
});

/** The dashboard on its own database, one process, with `env` (WAYBILL_MAX_BODY_BYTES) on top of no WAYBILL_*. */
async function startDashboard(serving: Serving, env: Record<string, string> = {}): Promise<Dashboard> {
  const base = Object.fromEntries(
    Object.entries(process.env).filter(([k]) => !k.startsWith('WAYBILL_')),
  ) as NodeJS.ProcessEnv;
  const dir = mkdtempSync(join(tmpdir(), 'waybill-e2e-body-'));
  dirs.push(dir);
  const databaseUrl = `file:${join(dir, 'b.db')}`;
  // Migrated before the dashboard opens it, as `waybill up` leaves it.
  await (await openStore(databaseUrl, { synchronous: 'normal' })).close();
  const server = serving === 'standalone' ? ['--server', join(ROOT, '.next', 'standalone', 'server.js')] : [];
  const proc = spawn(process.execPath, [WEB, ...server, '--port', String(PORT), '--hostname', '127.0.0.1'], {
    cwd: ROOT,
    env: { ...base, ...env, DATABASE_URL: databaseUrl, WAYBILL_WEB_PROCESSES: '1' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  running.set(proc, () => output);
  void once(proc, 'close').then(() => running.delete(proc));
  proc.stdout!.setEncoding('utf8').on('data', (c: string) => (output += c));
  proc.stderr!.setEncoding('utf8').on('data', (c: string) => (output += c));
  await expect.poll(() => output, { timeout: 60_000 }).toMatch(/waybill web: all 1 listening/);
  return { databaseUrl, output: () => output };
}

/**
 * The standalone server serves the static assets the package copies beside it (scripts/build-dashboard.ts),
 * which .next/standalone lacks: the browser gets them from the build they were made with.
 */
async function staticFromBuild(page: Page): Promise<void> {
  await page.route(`${BASE}/_next/static/**`, (route) =>
    route.fulfill({
      path: join(ROOT, '.next', decodeURIComponent(new URL(route.request().url()).pathname).slice('/_next/'.length)),
    }),
  );
}

/** A claim whose holder is gone, on the dashboard's database: its lease passes at once. */
async function orphanedClaim(databaseUrl: string, key: string): Promise<void> {
  const store = (await openStore(databaseUrl, { synchronous: 'normal' })) as FullStore;
  try {
    await orphanClaim(store, key.slice(0, key.indexOf(':')), key);
  } finally {
    await store.close();
  }
}

const committedBytes = (databaseUrl: string, key: string) => {
  const db = new Database(databaseUrl.slice('file:'.length), { readonly: true, fileMustExist: true });
  try {
    return (
      db.prepare('SELECT length(result_json) AS n FROM committed WHERE idem_key = ?').get(key) as
        | { n: number }
        | undefined
    )?.n;
  } finally {
    db.close();
  }
};

/** The claims page's resolve action, as the build names it: a body sent to it is an action's body. */
function resolveActionId(): string {
  const manifest = JSON.parse(readFileSync(join(ROOT, '.next', 'server', 'server-reference-manifest.json'), 'utf8'));
  const [id] = Object.entries(manifest.node as Record<string, { exportedName?: string }>).find(
    ([, action]) => action.exportedName === 'resolveClaimAction',
  )!;
  return id;
}

interface Answer {
  status: number;
  connection: string | undefined;
}

/**
 * POSTs an action body of `bytes` to /claims as the browser does (same origin, Next-Action), on a connection of
 * its own: with a Content-Length that declares them and only 7 of them sent, or chunked, 64 KiB a chunk, each
 * written once the last has drained, until all are sent or the server answers. Either way the body never ends (no
 * last chunk), so a server that answers has answered on what it counted, not on a body read whole. Then it closes
 * its side, as a client told to stop does.
 */
function postAction(bytes: number, framing: 'declared' | 'chunked'): Promise<Answer> {
  return new Promise((resolve) => {
    const socket = net.connect(PORT, '127.0.0.1');
    let text = '';
    let sent = 0;
    socket.setEncoding('latin1');
    socket.on('data', (d: string) => (text += d));
    // Writes the server no longer reads may end in a reset once it closes: the answer is what counts.
    socket.on('error', () => {});
    socket.on('close', () => {
      const head = text.slice(0, text.indexOf('\r\n\r\n'));
      resolve({
        status: Number(head.split(' ')[1]),
        connection: /^connection: *(.*)$/im.exec(head)?.[1],
      });
    });
    socket.on('connect', async () => {
      const length = framing === 'declared' ? `Content-Length: ${bytes}` : 'Transfer-Encoding: chunked';
      socket.write(
        `POST /claims HTTP/1.1\r\nHost: 127.0.0.1:${PORT}\r\nOrigin: ${BASE}\r\nSec-Fetch-Site: same-origin\r\n` +
          `Next-Action: ${resolveActionId()}\r\nContent-Type: text/plain;charset=UTF-8\r\n${length}\r\n\r\n`,
      );
      if (framing === 'declared') {
        sent = 7;
        socket.write('["a","b');
        await new Promise((r) => socket.once('data', r).once('close', r));
        return void socket.end();
      }
      const piece = 'z'.repeat(64 * 1024);
      while (sent < bytes && text === '' && !socket.destroyed) {
        const size = Math.min(piece.length, bytes - sent);
        const drained = socket.write(`${size.toString(16)}\r\n${piece.slice(0, size)}\r\n`);
        sent += size;
        if (!drained) await new Promise((r) => socket.once('drain', r).once('data', r).once('close', r));
      }
      if (socket.destroyed) return;
      if (text === '') await new Promise((r) => socket.once('data', r).once('close', r));
      socket.end();
    });
  });
}

/** A result of `bytes` bytes of JSON text. */
const resultOf = (bytes: number) => JSON.stringify({ summary: 'x'.repeat(bytes - '{"summary":""}'.length) });

for (const serving of ['next start', 'standalone'] as const) {
  test(`${serving}: raised to 4 MiB, a 2 MiB result resolves through the form, and past 5 MiB is refused 413 declared or chunked`, async ({
    page,
  }) => {
    const dashboard = await startDashboard(serving, { WAYBILL_MAX_BODY_BYTES: String(4 * MiB) });
    const key = 'e2e-body-raised:step:0';
    await orphanedClaim(dashboard.databaseUrl, key);
    if (serving === 'standalone') await staticFromBuild(page);

    const claims = new ClaimsPage(page);
    await page.goto(`${BASE}/claims`);
    await expect(claims.orphaned(key)).toBeVisible();
    const result = resultOf(2 * MiB);
    await claims.resolve(key, result);
    await expect(claims.message).toContainText(/resolved/i);
    await expect(page.getByTestId('error-boundary')).toHaveCount(0);
    expect(committedBytes(dashboard.databaseUrl, key)).toBe(result.length);

    // The guard's limit is the limit plus a quarter: 5 MiB.
    const declared = await postAction(5 * MiB + 1, 'declared');
    expect(declared, dashboard.output()).toMatchObject({ status: 413, connection: 'close' });
    // Answered when the count passed the limit, the body still unended.
    const chunked = await postAction(5 * MiB + 256 * 1024, 'chunked');
    expect(chunked, dashboard.output()).toMatchObject({ status: 413, connection: 'close' });
  });
}

test('at the default limit the form refuses 2 MiB itself, and the server refuses them declared or chunked', async ({
  page,
}) => {
  const dashboard = await startDashboard('next start');
  const key = 'e2e-body-default:step:0';
  await orphanedClaim(dashboard.databaseUrl, key);

  const claims = new ClaimsPage(page);
  await page.goto(`${BASE}/claims`);
  await expect(claims.orphaned(key)).toBeVisible();
  const result = resultOf(2 * MiB);
  await claims.resolve(key, result);
  await expect(claims.row(key).getByTestId('field-error-result')).toHaveText(
    `is ${result.length.toLocaleString('en-US')} bytes: the limit is 1,048,576 bytes (WAYBILL_MAX_BODY_BYTES)`,
  );
  expect(committedBytes(dashboard.databaseUrl, key)).toBeUndefined();

  for (const framing of ['declared', 'chunked'] as const) {
    const answer = await postAction(2 * MiB, framing);
    expect(answer, `${framing}\n${dashboard.output()}`).toMatchObject({ status: 413, connection: 'close' });
  }
  expect(committedBytes(dashboard.databaseUrl, key)).toBeUndefined();
});
