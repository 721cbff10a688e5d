/**
 * Command workflows with real processes: `waybill worker` spawns the program (the python-agent demo from a
 * fresh venv, or a user module's command), hands it a run token and the API's address, and stops, retries or
 * resumes it like any run. The API is the route handlers on a real port; the store a real SQLite file.
 */

import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { pathToFileURL } from 'node:url';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BIN, ROOT } from '../cli/support';
import { type Child, spawnCommand } from '../support/child';
import { type Answer, request } from '../support/http';
import { makeTempDir } from '../support/tmp';
import { until } from '../support/until';
import { pythonMissing, sharedVenv } from './venv';

const OPERATOR = 'command-operator-token-0123456789';
const dir = makeTempDir('waybill-command-');
const DB = dir.file('w.db');
process.env.DATABASE_URL = `file:${DB}`;
process.env.WAYBILL_OPERATOR_TOKEN = OPERATOR;
process.env.WAYBILL_SESSION_SECRET = 'command-suite-session-secret-0123';
// The programs ask for the workers' 2 s lease; the server's own lease bounds what it grants on SQLite.
process.env.WAYBILL_LEASE_MS = '2000';

const missing = pythonMissing();
if (missing && process.env.CI === 'true')
  throw new Error(`test/python needs python3 with venv under CI=true: ${missing}`);

const { startRouteServer } = await import('../support/route-server');
const cache = globalThis as { waybillStore?: Promise<{ close(): Promise<void> }> };
let server: Awaited<ReturnType<typeof startRouteServer>>;
let venvBin = '';

beforeAll(async () => {
  server = await startRouteServer();
  // The store exists (migrated) before the first worker or read.
  await (await import('../../lib/data/store')).getStore();
  if (!missing) venvBin = dirname(await sharedVenv());
}, 400_000); // a venv and a pip install: seconds when quiet, minutes on busy cores
afterAll(async () => {
  await server?.close();
  await (await cache.waybillStore?.catch(() => undefined))?.close();
  dir.remove();
});

const api = (method: string, path: string, body?: unknown): Promise<Answer> =>
  request(server.url, method, path, OPERATOR, body);
function one<T>(sql: string, ...args: unknown[]): T | undefined {
  const db = new Database(DB, { readonly: true, fileMustExist: true });
  try {
    return db.prepare(sql).get(...args) as T | undefined;
  } finally {
    db.close();
  }
}
/** The run's log as the run page's API serves it (GET /api/v1/runs/{id}/logs): from the store, not the worker. */
async function logOf(runId: string): Promise<{ seq: number; stream: string; line: string }[]> {
  const answer = await api('GET', `/api/v1/runs/${encodeURIComponent(runId)}/logs?after=0&limit=1000`);
  expect(answer.status, JSON.stringify(answer.body)).toBe(200);
  return answer.body.lines;
}
const committedOf = (runId: string) =>
  one<{ n: number }>('SELECT count(*) AS n FROM committed WHERE run_id = ?', runId)!.n;
const statusOf = (runId: string) =>
  one<{ status: string; error: string | null; output_json: string | null }>(
    'SELECT status, error, output_json FROM runs WHERE id = ?',
    runId,
  );

/** `waybill worker` on the suite's store, its programs finding the venv's python3 first. */
function worker(id: string, options: { module?: string; url?: string | null } = {}): Child {
  const env: Record<string, string> = {
    DATABASE_URL: `file:${DB}`,
    PATH: `${venvBin}:${process.env.PATH}`,
    WAYBILL_HEARTBEAT_MS: '200',
    WAYBILL_RUN_LEASE_MS: '10000',
    WAYBILL_LEASE_MS: '2000',
    // The venv is in this suite's private temp directory, its python under the machine's (root's) pyenv: out of
    // nobody's reach. What a program may not reach is test/engine/program-isolation's; this suite is the protocol.
    ...(process.getuid?.() === 0 ? { WAYBILL_PROGRAM_USER: 'root' } : {}),
  };
  if (options.url !== null) env.WAYBILL_URL = options.url ?? server.url;
  const child = spawnCommand(
    process.execPath,
    [BIN, 'worker', '--id', id, ...(options.module ? ['--workflows', options.module] : [])],
    { env },
  );
  return child;
}
const served = (id: string, name: string) =>
  (
    one<{ w: string | null }>('SELECT workflows_json AS w FROM workers WHERE id = ? AND stopped_at IS NULL', id)?.w ??
    '[]'
  ).includes(`"${name}"`);

describe.skipIf(missing !== null)('command workflows', () => {
  it('python-agent: its worker SIGKILLed mid-run, the next worker spawns the program again and every step is committed once', async () => {
    const w1 = worker('w-py-1');
    await until('w-py-1 serving python-agent', () => served('w-py-1', 'python-agent'));
    const started = await api('POST', '/api/v1/runs', {
      workflow: 'python-agent',
      id: 'pa-kill',
      input: { steps: 40, modelMs: 40 },
    });
    expect(started.status, JSON.stringify(started.body)).toBe(201);
    await until('10 steps committed', () => committedOf('pa-kill') >= 10);
    w1.kill('SIGKILL');
    await w1.exited;
    const atKill = committedOf('pa-kill');
    expect(atKill).toBeLessThan(40);
    const w2 = worker('w-py-2');
    await until('pa-kill completed', () => statusOf('pa-kill')?.status === 'completed', { timeoutMs: 90_000 });
    w2.kill('SIGTERM');
    await w2.exited;
    const db = new Database(DB, { readonly: true });
    const rows = db
      .prepare("SELECT idem_key AS key, worker_id AS worker FROM committed WHERE run_id = 'pa-kill' ORDER BY step")
      .all() as { key: string; worker: string }[];
    db.close();
    expect(rows.map((r) => r.key)).toEqual(Array.from({ length: 40 }, (_, n) => `pa-kill:step:${n}`));
    const by = new Set(rows.map((r) => r.worker));
    expect([...by].sort()).toEqual(['w-py-1', 'w-py-2']);
    // The receiver's log: every step delivered, and at most the one in hand at the kill twice.
    const effects = readFileSync(join(dir.path, 'python-agent', 'pa-kill.effects.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { key: string });
    expect(new Set(effects.map((e) => e.key)).size).toBe(40);
    expect(effects.length - 40).toBeLessThanOrEqual(1);
    // The program's lines are the run's log: both programs' steps, and the worker's own notes.
    const log = await logOf('pa-kill');
    expect(
      log.filter((l) => l.stream === 'worker' && /^started python3 -m waybill_client\.example/.test(l.line)),
    ).toHaveLength(2);
    expect(log.some((l) => l.stream === 'stdout' && l.line === 'step 39 executed')).toBe(true);
    // One numbering across both workers: the second's lines follow the first's, no seq twice, none missing.
    expect(log.map((l) => l.seq)).toEqual(Array.from({ length: log.length }, (_, i) => i + 1));
  }, 150_000);

  it('a paused run stops its program after the step in hand; resumed, the program is spawned again and completes', async () => {
    const w = worker('w-py-pause');
    await until('w-py-pause serving', () => served('w-py-pause', 'python-agent'));
    expect(
      (
        await api('POST', '/api/v1/runs', {
          workflow: 'python-agent',
          id: 'pa-pause',
          input: { steps: 60, modelMs: 40 },
        })
      ).status,
    ).toBe(201);
    await until('5 steps committed', () => committedOf('pa-pause') >= 5);
    expect((await api('POST', '/api/v1/runs/pa-pause/pause', {})).status).toBe(200);
    await until('the program exited', async () =>
      (await logOf('pa-pause')).some((l) => l.stream === 'worker' && /^program (exited|killed)/.test(l.line)),
    );
    const stopped = committedOf('pa-pause');
    await sleep(500);
    expect(committedOf('pa-pause')).toBe(stopped);
    expect(stopped).toBeLessThan(60);
    expect(statusOf('pa-pause')?.status).toBe('paused');
    // It stopped itself at its step boundary (exit 3 after the commit told it), not by SIGKILL.
    expect(
      (await logOf('pa-pause'))
        .filter((l) => l.stream === 'worker' && l.line.startsWith('program '))
        .map((l) => l.line),
    ).toEqual(['program exited with 3']);
    expect((await api('POST', '/api/v1/runs/pa-pause/resume', {})).status).toBe(200);
    await until('pa-pause completed', () => statusOf('pa-pause')?.status === 'completed', { timeoutMs: 60_000 });
    expect(committedOf('pa-pause')).toBe(60);
    w.kill('SIGTERM');
    await w.exited;
  }, 120_000);

  it('a draining worker SIGTERMs its program, which stops after its step in hand; a program that ignores SIGTERM is SIGKILLed after the grace period', async () => {
    const w = worker('w-py-drain');
    await until('w-py-drain serving', () => served('w-py-drain', 'python-agent'));
    expect(
      (
        await api('POST', '/api/v1/runs', {
          workflow: 'python-agent',
          id: 'pa-drain',
          input: { steps: 200, modelMs: 40 },
        })
      ).status,
    ).toBe(201);
    await until('3 steps committed', () => committedOf('pa-drain') >= 3);
    w.kill('SIGTERM');
    expect((await w.exited).code).toBe(0);
    const notes = (await logOf('pa-drain')).filter((l) => l.stream === 'worker').map((l) => l.line);
    expect(notes.slice(-2)).toEqual([
      expect.stringMatching(/^stopping the program \(SIGTERM; SIGKILL in 10000 ms\): .*draining/),
      'program exited with 3',
    ]);
    // Handed back, not failed: queued for the next worker, its steps so far committed and not one more.
    const stopped = committedOf('pa-drain');
    expect(statusOf('pa-drain')?.status).toBe('queued');
    expect(stopped).toBeLessThan(200);
    expect((await api('POST', '/api/v1/runs/pa-drain/cancel', {})).status).toBe(200);

    const engine = pathToFileURL(join(ROOT, 'lib/engine/command-workflow.ts')).href;
    const zod = pathToFileURL(join(ROOT, 'node_modules/zod/index.js')).href;
    const module = dir.file('stubborn.mjs');
    writeFileSync(
      module,
      `import { defineCommandWorkflow } from ${JSON.stringify(engine)};
import { z } from ${JSON.stringify(zod)};
const script = 'import signal, time\\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\\nprint("ready", flush=True)\\ntime.sleep(60)';
export const stubborn = defineCommandWorkflow({ name: 'stubborn', input: z.object({}), command: ['python3', '-c', script], graceMs: 300 });
`,
    );
    const w2 = worker('w-stubborn', { module });
    await until('w-stubborn serving', () => served('w-stubborn', 'stubborn'));
    expect((await api('POST', '/api/v1/runs', { workflow: 'stubborn', id: 'cmd-stubborn', input: {} })).status).toBe(
      201,
    );
    await until('ready', async () => (await logOf('cmd-stubborn')).some((l) => l.line === 'ready'));
    expect((await api('POST', '/api/v1/runs/cmd-stubborn/cancel', {})).status).toBe(200);
    await until(
      'killed',
      async () => (await logOf('cmd-stubborn')).some((l) => l.line === 'program killed by SIGKILL'),
      { timeoutMs: 30_000 },
    );
    expect(
      (await logOf('cmd-stubborn'))
        .filter((l) => l.stream === 'worker')
        .map((l) => l.line)
        .slice(-2),
    ).toEqual([
      expect.stringMatching(
        /^stopping the program \(SIGTERM; SIGKILL in 300 ms\): run cmd-stubborn interrupted: it is cancelled$/,
      ),
      'program killed by SIGKILL',
    ]);
    expect(statusOf('cmd-stubborn')?.status).toBe('cancelled');
    w2.kill('SIGTERM');
    await w2.exited;
  }, 120_000);

  it('a failing program is retried with backoff and then fails the run; without WAYBILL_URL the run fails saying so', async () => {
    const engine = pathToFileURL(join(ROOT, 'lib/engine/command-workflow.ts')).href;
    const zod = pathToFileURL(join(ROOT, 'node_modules/zod/index.js')).href;
    const module = dir.file('commands.mjs');
    writeFileSync(
      module,
      `import { defineCommandWorkflow } from ${JSON.stringify(engine)};
import { z } from ${JSON.stringify(zod)};
const script = 'import os, sys\\nn = int(os.environ["WAYBILL_ATTEMPT"])\\nprint("attempt", n, "input", sys.stdin.readline().strip())\\nif n < int(os.environ["SUCCEED_AT"]):\\n    sys.exit("not yet: attempt %d" % n)';
export const flaky = defineCommandWorkflow({ name: 'flaky', input: z.object({ x: z.number() }), command: ['python3', '-c', script], env: { SUCCEED_AT: '3' } });
export const broken = defineCommandWorkflow({ name: 'broken', input: z.object({}), command: ['python3', '-c', script], env: { SUCCEED_AT: '99' }, maxAttempts: 2 });
`,
    );
    const w = worker('w-cmd', { module });
    await until('w-cmd serving flaky', () => served('w-cmd', 'flaky'));
    // python-agent is served by a worker that has WAYBILL_URL; this one has it too.
    expect(served('w-cmd', 'python-agent')).toBe(true);
    expect((await api('POST', '/api/v1/runs', { workflow: 'flaky', id: 'cmd-flaky', input: { x: 7 } })).status).toBe(
      201,
    );
    expect((await api('POST', '/api/v1/runs', { workflow: 'broken', id: 'cmd-broken', input: {} })).status).toBe(201);
    await until(
      'both finished',
      () => statusOf('cmd-flaky')?.status === 'completed' && ['failed'].includes(statusOf('cmd-broken')?.status ?? ''),
      { timeoutMs: 60_000 },
    );
    expect(JSON.parse(statusOf('cmd-flaky')!.output_json!)).toEqual({ exitCode: 0, attempts: 3 });
    const flakyLog = await logOf('cmd-flaky');
    expect(flakyLog.filter((l) => l.stream === 'stdout').map((l) => l.line)).toEqual([
      'attempt 1 input {"x":7}',
      'attempt 2 input {"x":7}',
      'attempt 3 input {"x":7}',
    ]);
    expect(flakyLog.filter((l) => l.stream === 'worker' && /attempt \d of 3 in \d+ ms$/.test(l.line))).toHaveLength(2);
    // What the program wrote on stderr, each attempt's, read back from the store through the API.
    expect((await logOf('cmd-broken')).filter((l) => l.stream === 'stderr').map((l) => l.line)).toEqual([
      'not yet: attempt 1',
      'not yet: attempt 2',
    ]);
    expect(statusOf('cmd-broken')!.error).toBe(
      `python3 -c ${'import os, sys\nn = int(os.environ["WAYBILL_ATTEMPT"])\nprint("attempt", n, "input", sys.stdin.readline().strip())\nif n < int(os.environ["SUCCEED_AT"]):\n    sys.exit("not yet: attempt %d" % n)'} exited with 1: not yet: attempt 2 (attempt 2 of 2)`,
    );
    w.kill('SIGTERM');
    await w.exited;

    const bare = worker('w-no-url', { module, url: null });
    await until('w-no-url serving flaky', () => served('w-no-url', 'flaky'));
    expect(served('w-no-url', 'python-agent')).toBe(false);
    expect((await api('POST', '/api/v1/runs', { workflow: 'flaky', id: 'cmd-no-url', input: { x: 1 } })).status).toBe(
      201,
    );
    await until('cmd-no-url failed', () => statusOf('cmd-no-url')?.status === 'failed', { timeoutMs: 30_000 });
    expect(statusOf('cmd-no-url')!.error).toBe(
      "workflow flaky runs a program, which needs the control plane's address: start the worker with --url (or WAYBILL_URL), e.g. waybill worker --url http://127.0.0.1:3000",
    );
    // The log is the store's: nothing is written into the data directory for it any more.
    expect(existsSync(join(dir.path, 'run-logs'))).toBe(false);
    bare.kill('SIGTERM');
    await bare.exited;
  }, 120_000);
});
