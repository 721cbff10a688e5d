/**
 * bin/web.mjs, the dashboard as a Node cluster: real processes on the production build (made by the suite's
 * prepare step). Both workers answer on the one port, SIGTERM drains them and exits 0, and a worker that dies
 * takes the others down (exit 1), so npm start sees its dashboard die and stops too. No browser is needed.
 *
 * "Answered" is read from /proc/<pid>/io: the bytes each worker wrote (pages go out through write(2)) grow
 * while we fetch, which needs no marker in the responses and nothing from the app. Linux only, like /proc.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { get } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect, noChromium, test } from './support/test';
import { pidAlive as alive } from './support/waybill';

test.skip(noChromium, 'no chromium: the suite made no production build');

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const WEB = fileURLToPath(new URL('../bin/web.mjs', import.meta.url));
// The suite's servers hold the port and the next one; npm start's spec the one after.
const PORT = Number(process.env.WAYBILL_E2E_PORT ?? 3210) + 3;
const noProc = !existsSync('/proc/self/io');

interface Web {
  proc: ChildProcess;
  pids: number[];
  output: () => string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

const running = new Set<ChildProcess>();
const dirs: string[] = [];
test.afterEach(() => {
  for (const proc of running) proc.kill('SIGKILL');
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

async function startWeb(): Promise<Web> {
  const base = Object.fromEntries(
    Object.entries(process.env).filter(([k]) => !k.startsWith('WAYBILL_')),
  ) as NodeJS.ProcessEnv;
  const dir = mkdtempSync(join(tmpdir(), 'waybill-e2e-web-'));
  dirs.push(dir);
  const proc = spawn(process.execPath, [WEB, '--port', String(PORT), '--hostname', '127.0.0.1'], {
    cwd: ROOT,
    env: { ...base, DATABASE_URL: `file:${join(dir, 'w.db')}`, WAYBILL_WEB_PROCESSES: '2' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  running.add(proc);
  let output = '';
  proc.stdout!.setEncoding('utf8').on('data', (c: string) => (output += c));
  proc.stderr!.setEncoding('utf8').on('data', (c: string) => (output += c));
  const exited = once(proc, 'close').then(([code, signal]) => {
    running.delete(proc);
    return { code: code as number | null, signal: signal as NodeJS.Signals | null };
  });
  await expect.poll(() => output, { timeout: 30_000 }).toMatch(/pids \d+, \d+/);
  const pids = /pids (\d+), (\d+)/.exec(output)!.slice(1).map(Number);
  // Next's banner comes once for the cluster; the primary says when every worker listens.
  await expect.poll(() => output, { timeout: 60_000 }).toMatch(/waybill web: all 2 listening/);
  expect(output.match(/Ready in/g)?.length).toBe(1);
  return { proc, pids, output: () => output, exited };
}

/** One request on a connection of its own, so the primary hands each to a worker afresh. */
function fetchOnce(path: string): Promise<number> {
  return new Promise((resolve, reject) => {
    get({ host: '127.0.0.1', port: PORT, path, agent: false, headers: { connection: 'close' } }, (res) => {
      let bytes = 0;
      res.on('data', (chunk: Buffer) => (bytes += chunk.length));
      res.on('end', () =>
        res.statusCode === 200 ? resolve(bytes) : reject(new Error(`${path}: HTTP ${res.statusCode}`)),
      );
    }).on('error', reject);
  });
}

const written = (pid: number) => Number(/^wchar: (\d+)$/m.exec(readFileSync(`/proc/${pid}/io`, 'utf8'))![1]);

test.describe('bin/web.mjs (the dashboard cluster)', () => {
  test.skip(noProc, '/proc/<pid>/io is Linux-only');

  test('serves from both workers on one port; SIGTERM drains them and exits 0', async () => {
    const web = await startWeb();
    await fetchOnce('/claims');
    const before = web.pids.map(written);
    let page = 0;
    for (let i = 0; i < 10; i++) page = await fetchOnce('/claims');
    const grew = web.pids.map((pid, i) => written(pid) - before[i]!);
    // Ten connections handed out in turn: each worker wrote at least two pages (the other writes are a few log lines).
    for (const bytes of grew) expect(bytes, web.output()).toBeGreaterThanOrEqual(2 * page);

    web.proc.kill('SIGTERM');
    expect(await web.exited, web.output()).toEqual({ code: 0, signal: null });
    expect(web.pids.filter(alive)).toEqual([]);
  });

  test('a worker that dies stops the others: exit 1, saying which', async () => {
    const web = await startWeb();
    const [dead, other] = web.pids as [number, number];
    process.kill(dead, 'SIGKILL');
    expect((await web.exited).code, web.output()).toBe(1);
    expect(web.output()).toContain(`process ${dead} exited unexpectedly (killed by SIGKILL); stopping the other`);
    expect(alive(other)).toBe(false);
  });
});
