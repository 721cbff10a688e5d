/**
 * bin/web.mjs, the dashboard as a Node cluster: real processes on the production build. Both workers answer
 * on the one port, SIGTERM drains them and exits 0, and a worker that dies takes the others down (exit 1),
 * so npm start sees its dashboard die and stops too.
 *
 * "Answered" is read from /proc/<pid>/io: the bytes each worker wrote (pages go out through write(2)) grow
 * while we fetch, which needs no marker in the responses and nothing from the app. Linux only, like /proc.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, readFileSync } from 'node:fs';
import { get } from 'node:http';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { tempDir } from '../support/tmp';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const WEB = fileURLToPath(new URL('../../bin/web.mjs', import.meta.url));
const PORT = 3597;
// Linux only: the per-process write counters are read from /proc.
const noProc = !existsSync('/proc/self/io');
if (noProc) process.stderr.write('web-cluster test SKIPPED: /proc/<pid>/io is Linux-only\n');

/** next start serves a production build: made here when missing (the browser suite then reuses it). */
function ensureBuild(): void {
  if (existsSync(`${ROOT}.next/BUILD_ID`)) return;
  const build = spawnSync(process.execPath, [createRequire(import.meta.url).resolve('next/dist/bin/next'), 'build'], { cwd: ROOT, stdio: 'inherit' });
  if (build.status !== 0) throw new Error(`next build failed (${build.signal ?? `exit code ${build.status}`})`);
}

interface Web {
  proc: ChildProcess;
  pids: number[];
  output: () => string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

const running = new Set<ChildProcess>();
afterEach(() => {
  for (const proc of running) proc.kill('SIGKILL');
});

async function startWeb(): Promise<Web> {
  const base = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('WAYBILL_'))) as NodeJS.ProcessEnv;
  const dir = tempDir('waybill-web-');
  const proc = spawn(process.execPath, [WEB, '--port', String(PORT), '--hostname', '127.0.0.1'], {
    cwd: ROOT, env: { ...base, DATABASE_URL: `file:${dir.file('w.db')}`, WAYBILL_WEB_PROCESSES: '2' }, stdio: ['ignore', 'pipe', 'pipe'],
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
  // Both workers print Ready once they listen.
  await expect.poll(() => output.match(/Ready in/g)?.length ?? 0, { timeout: 60_000 }).toBe(2);
  return { proc, pids, output: () => output, exited };
}

/** One request on a connection of its own, so the primary hands each to a worker afresh. */
function fetchOnce(path: string): Promise<number> {
  return new Promise((resolve, reject) => {
    get({ host: '127.0.0.1', port: PORT, path, agent: false, headers: { connection: 'close' } }, (res) => {
      let bytes = 0;
      res.on('data', (chunk: Buffer) => (bytes += chunk.length));
      res.on('end', () => (res.statusCode === 200 ? resolve(bytes) : reject(new Error(`${path}: HTTP ${res.statusCode}`))));
    }).on('error', reject);
  });
}

const written = (pid: number) => Number(/^wchar: (\d+)$/m.exec(readFileSync(`/proc/${pid}/io`, 'utf8'))![1]);
const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe.skipIf(noProc)('bin/web.mjs (the dashboard cluster)', () => {
  beforeAll(ensureBuild, 600_000);

  it('serves from both workers on one port; SIGTERM drains them and exits 0', async () => {
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

  it('a worker that dies stops the others: exit 1, saying which', async () => {
    const web = await startWeb();
    const [dead, other] = web.pids as [number, number];
    process.kill(dead, 'SIGKILL');
    expect((await web.exited).code, web.output()).toBe(1);
    expect(web.output()).toContain(`process ${dead} exited unexpectedly (killed by SIGKILL); stopping the other`);
    expect(alive(other)).toBe(false);
  });
});

describe('bin/web.mjs settings', () => {
  it('refuses a bad WAYBILL_WEB_PROCESSES before starting anything: exit 2, naming it', async () => {
    const proc = spawn(process.execPath, [WEB, '--port', String(PORT)], {
      cwd: ROOT, env: { ...process.env, WAYBILL_WEB_PROCESSES: '0' }, stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    proc.stderr.setEncoding('utf8').on('data', (c: string) => (stderr += c));
    const [code] = await once(proc, 'close');
    expect(code).toBe(2);
    expect(stderr).toContain('WAYBILL_WEB_PROCESSES: must be a whole number, 1-64');
  });
});
