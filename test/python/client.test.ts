/**
 * clients/python against the real API: route handlers on a real port (test/support/route-server.ts), a real
 * SQLite file, a fresh venv with the package installed from the checkout with no index, and Python agents as
 * real processes, SIGKILLed at random points. Counts are exact: every step committed once; a side effect
 * delivered twice only where a kill landed between its delivery and its commit, and its redo in doubt.
 */

import { existsSync, readFileSync } from 'node:fs';
import { createServer, type IncomingMessage } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runUsage } from '../../lib/gateway/ledger';
import type { Store } from '../../lib/store/contract';
import { type Child, spawnCommand } from '../support/child';
import { type Answer, request } from '../support/http';
import { makeTempDir } from '../support/tmp';
import { pythonMissing, sharedVenv } from './venv';

const OPERATOR = 'python-operator-token-0123456789';
const VIEWER = 'python-viewer-token-0123456789ab';
const dir = makeTempDir('waybill-python-');
const DB = dir.file('w.db');
// The handlers read lib/config once: set before the first import of them.
process.env.DATABASE_URL = `file:${DB}`;
process.env.WAYBILL_OPERATOR_TOKEN = OPERATOR;
process.env.WAYBILL_VIEWER_TOKEN = VIEWER;
process.env.WAYBILL_SESSION_SECRET = 'python-suite-session-secret-0123';
// Only client processes are killed here, never the server: a commit needs to survive a crash of the process, not of the machine.
process.env.WAYBILL_SQLITE_SYNC = 'normal';
// The clients here ask for leases as short as 300 ms; the server's own lease bounds what it grants on SQLite.
process.env.WAYBILL_LEASE_MS = '300';

const missing = pythonMissing();
if (missing && process.env.CI === 'true')
  throw new Error(`test/python needs python3 with venv under CI=true: ${missing}`);
if (missing) console.warn(`\n*** test/python SKIPPED: ${missing} ***\n`);

const { startRouteServer } = await import('../support/route-server');
const cache = globalThis as { waybillStore?: Promise<{ close(): Promise<void> }> };
let server: Awaited<ReturnType<typeof startRouteServer>>;
let python = '';

beforeAll(async () => {
  server = await startRouteServer();
  if (!missing) python = await sharedVenv();
}, 400_000); // a venv and a pip install: seconds when quiet, minutes on busy cores

afterAll(async () => {
  await server?.close();
  await (await cache.waybillStore?.catch(() => undefined))?.close();
  dir.remove();
});

function read<T>(sql: string, ...args: unknown[]): T[] {
  const db = new Database(DB, { readonly: true, fileMustExist: true });
  try {
    return db.prepare(sql).all(...args) as T[];
  } finally {
    db.close();
  }
}
const countOf = (sql: string, ...args: unknown[]) =>
  read<{ n: number }>(`SELECT count(*) AS n FROM ${sql}`, ...args)[0]!.n;

const api = (method: string, path: string, token: string | null, body?: unknown): Promise<Answer> =>
  request(server.url, method, path, token, body);

/** The package's example agent (the article's experiment) as a process of its own. */
function agent(runId: string, env: Record<string, string> = {}): Child {
  return spawnCommand(python, ['-m', 'waybill_client.example'], {
    env: {
      WAYBILL_URL: server.url,
      WAYBILL_TOKEN: OPERATOR,
      WAYBILL_RUN_ID: runId,
      STEPS: '200',
      MODEL_MS: '2',
      EFFECTS: dir.file(`${runId}.effects.jsonl`),
      WAYBILL_LEASE_MS: '1000',
      PYTHONDONTWRITEBYTECODE: '1',
      ...env,
    },
  });
}

interface Delivery {
  key: string;
  pid: number;
  worker: string;
  inDoubt: boolean;
  attempt: number;
}
const deliveries = (runId: string): Delivery[] => {
  const file = dir.file(`${runId}.effects.jsonl`);
  return existsSync(file)
    ? readFileSync(file, 'utf8')
        .trim()
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as Delivery)
    : [];
};

async function exitOf(child: Child): Promise<{ code: number | null; stderr: string; lines: string[] }> {
  const e = await child.exited;
  return { code: e.code, stderr: child.stderr(), lines: child.lines };
}

describe.skipIf(missing !== null)('the Python client', () => {
  it('a 200-step agent SIGKILLed at random points 22 times: every step committed once, duplicates only where a kill fell between delivery and commit, each in doubt', async () => {
    const runId = 'py-kill';
    let seed = Number(process.env.WAYBILL_PY_SEED ?? Date.now() % 1_000_003);
    console.log(`py-kill seed ${seed} (WAYBILL_PY_SEED=${seed} repeats the kill points)`);
    const random = () => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31;
    const killedPids: number[] = [];
    for (let life = 0; killedPids.length < 22; life++) {
      if (life > 60) throw new Error('the agent finished before 22 kills landed');
      const child = agent(runId);
      // Most kills land once the agent is stepping; some while it is still starting, claiming or waiting out a lease.
      if (random() < 0.8) await child.waitForLine(/^step \d+ /, 30_000).catch(() => undefined);
      await sleep(random() * 120);
      child.kill('SIGKILL');
      if ((await child.exited).signal === 'SIGKILL') killedPids.push(child.pid);
    }
    const last = await exitOf(agent(runId));
    expect(last.code, last.stderr).toBe(0);

    // Every step committed exactly once, and the run is listed by name, completed.
    const committed = new Map(
      read<{ key: string; worker: string }>(
        'SELECT idem_key AS key, worker_id AS worker FROM committed WHERE run_id = ?',
        runId,
      ).map((r) => [r.key, r.worker]),
    );
    expect(committed.size).toBe(200);
    for (let n = 0; n < 200; n++) expect(committed.has(`${runId}:step:${n}`)).toBe(true);
    const listed = await api('GET', '/api/v1/runs?workflow=python-article', VIEWER);
    expect(listed.body.runs.find((r: { id: string }) => r.id === runId)).toMatchObject({
      status: 'completed',
      step: 200,
      totalSteps: 200,
      executed: 200,
    });

    // A delivery not committed by its own process is the last one of a killed process: the kill fell between them.
    const all = deliveries(runId);
    const lastOf = new Map<number, Delivery>();
    for (const d of all) lastOf.set(d.pid, d);
    const between = killedPids
      .map((pid) => lastOf.get(pid))
      .filter((d): d is Delivery => d !== undefined && committed.get(d.key) !== d.worker);
    for (const d of all) {
      if (committed.get(d.key) !== d.worker) expect(between, `${d.key} by pid ${d.pid}`).toContain(d);
    }
    // So each key was delivered once, plus once per kill that fell between its delivery and its commit.
    const byKey = new Map<string, Delivery[]>();
    for (const d of all) byKey.set(d.key, [...(byKey.get(d.key) ?? []), d]);
    expect(byKey.size).toBe(200);
    let duplicates = 0;
    for (const [key, list] of byKey) {
      const expected = 1 + between.filter((d) => d.key === key).length;
      expect(list.length, key).toBe(expected);
      duplicates += list.length - 1;
      // Every redo came after a dead holder's lease ran out: in doubt to the client, and 'expired' on the timeline.
      for (const redo of list.slice(1)) expect(redo, key).toMatchObject({ inDoubt: true });
      expect(
        countOf("step_events WHERE run_id = ? AND idem_key = ? AND outcome = 'expired'", runId, key),
      ).toBeGreaterThanOrEqual(list.length - 1);
    }
    expect(duplicates).toBe(between.length);
    // A takeover only ever follows a kill.
    expect(countOf("step_events WHERE run_id = ? AND outcome = 'expired'", runId)).toBeLessThanOrEqual(
      killedPids.length,
    );
    console.log(
      `py-kill: ${killedPids.length} kills, ${between.length} between a delivery and its commit (each delivered twice, in doubt)`,
    );
  }, 150_000);

  it("the article's experiment: 1,000 steps, SIGKILLed at step 620 mid-execute, resumed: one step redone, no side effect twice, the step in doubt on the claims list", async () => {
    const runId = 'py-article';
    const first = agent(runId, { STEPS: '1000', MODEL_MS: '0', STALL_AT_STEP: '620' });
    await first.waitForLine(/^executing py-article:step:620$/, 90_000);
    first.kill('SIGKILL');
    await first.exited;
    expect(countOf('committed WHERE run_id = ?', runId)).toBe(620);
    await sleep(1100); // the dead holder's lease (1 s) passes: its claim is orphaned, its side effect in doubt
    const claims = await api('GET', `/api/v1/claims?runId=${runId}`, VIEWER);
    expect(claims.body.claims).toEqual([
      expect.objectContaining({ key: 'py-article:step:620', step: 620, orphaned: true, attempt: 1 }),
    ]);
    const resumed = await exitOf(agent(runId, { STEPS: '1000', MODEL_MS: '0' }));
    expect(resumed.code, resumed.stderr).toBe(0);
    // Resumed at 620: step 620 was the one redone (in doubt, attempt 2); nothing before it ran again.
    expect(JSON.parse(resumed.lines.at(-1)!.slice('REPORT '.length))).toMatchObject({
      processed: 1000,
      executed: 380,
      skipped: 0,
      inDoubt: ['py-article:step:620'],
    });
    const all = deliveries(runId);
    expect(all).toHaveLength(1000);
    expect(new Set(all.map((d) => d.key)).size).toBe(1000);
    expect(all.find((d) => d.key === 'py-article:step:620')).toMatchObject({ inDoubt: true, attempt: 2 });
    expect(countOf('committed WHERE run_id = ?', runId)).toBe(1000);
  }, 120_000);

  it('a lost answer is retried with the same token, and a 503 after its Retry-After: nothing runs twice, nothing in doubt', async () => {
    // In front of the server: the first claim and the first commit go through and their answers are dropped
    // (the connection closed), and the first progress read is a 503 asking to retry after a second.
    const seen: { path: string; body: Record<string, unknown>; at: number }[] = [];
    const dropped = new Set<string>();
    const readAll = async (req: IncomingMessage) => {
      const chunks: Buffer[] = [];
      for await (const chunk of req) chunks.push(chunk as Buffer);
      return Buffer.concat(chunks).toString('utf8');
    };
    const proxy = createServer((req, res) => {
      void (async () => {
        const text = await readAll(req);
        const path = req.url ?? '/';
        seen.push({ path: `${req.method} ${path}`, body: text ? JSON.parse(text) : {}, at: performance.now() });
        if (req.method === 'GET' && path.endsWith('/progress') && !dropped.has('503')) {
          dropped.add('503');
          res.writeHead(503, { 'content-type': 'application/json', 'retry-after': '1' });
          res.end(
            JSON.stringify({
              error: { code: 'STORE_UNAVAILABLE', message: 'the store is busy or unreachable; retry shortly' },
            }),
          );
          return;
        }
        const upstream = await fetch(server.url + path, {
          method: req.method,
          body: text || undefined,
          headers: {
            authorization: req.headers.authorization ?? '',
            ...(text ? { 'content-type': 'application/json' } : {}),
          },
        });
        const answer = await upstream.text();
        const kind = path.split('/').pop()!;
        if ((kind === 'claim' || kind === 'commit') && !dropped.has(kind)) {
          dropped.add(kind);
          req.socket.destroy(); // the server did it; the client never hears so
          return;
        }
        res.writeHead(upstream.status, {
          'content-type': 'application/json',
          ...(upstream.headers.get('retry-after') ? { 'retry-after': upstream.headers.get('retry-after')! } : {}),
        });
        res.end(answer);
      })();
    });
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
    const port = (proxy.address() as { port: number }).port;
    try {
      const out = await exitOf(
        agent('py-lost', {
          WAYBILL_URL: `http://127.0.0.1:${port}`,
          STEPS: '3',
          MODEL_MS: '0',
          WAYBILL_LEASE_MS: '30000',
        }),
      );
      expect(out.code, out.stderr).toBe(0);
      expect(JSON.parse(out.lines.at(-1)!.slice('REPORT '.length))).toMatchObject({
        executed: 3,
        skipped: 0,
        awaited: 0,
        inDoubt: [],
      });
    } finally {
      await new Promise<void>((resolve) => proxy.close(() => resolve()));
    }
    expect([...dropped].sort()).toEqual(['503', 'claim', 'commit']);
    // The claim was sent twice with one token: the retry found the claim its own, not held for 30 s by itself.
    const claims = seen.filter((r) => r.path === 'POST /api/v1/checkpoint/claim' && r.body.key === 'py-lost:step:0');
    expect(claims).toHaveLength(2);
    expect(claims[1]!.body.token).toBe(claims[0]!.body.token);
    // The commit too, the same worker and duration: the server knew its own row and answered committed.
    const commits = seen.filter((r) => r.path === 'POST /api/v1/checkpoint/commit' && r.body.key === 'py-lost:step:0');
    expect(commits.map((c) => [c.body.token, c.body.workerId, c.body.durationMs])).toEqual(
      [0, 1].map(() => [claims[0]!.body.token, commits[0]!.body.workerId, commits[0]!.body.durationMs]),
    );
    const reads = seen.filter((r) => r.path === 'GET /api/v1/checkpoint/py-lost/progress');
    expect(reads).toHaveLength(2);
    expect(reads[1]!.at - reads[0]!.at).toBeGreaterThanOrEqual(990);
    expect(countOf("committed WHERE run_id = 'py-lost'")).toBe(3);
    expect(deliveries('py-lost')).toHaveLength(3);
    expect(countOf("step_events WHERE run_id = 'py-lost' AND outcome IN ('expired', 'lease_lost')")).toBe(0);
  });

  it('a paused run stops the Python loop before its next step; resumed, it completes', async () => {
    const runId = 'py-pause';
    const child = agent(runId, { STEPS: '100', MODEL_MS: '20' });
    await child.waitForLine(/^step 4 /);
    expect((await api('POST', `/api/v1/runs/${runId}/pause`, OPERATOR, {})).status).toBe(200);
    const stopped = await exitOf(child);
    expect(stopped.code).toBe(3);
    const stoppedAt = Number(/stopped before step (\d+)/.exec(stopped.stderr)?.[1]);
    expect(stopped.stderr.trim().split('\n')).toHaveLength(1);
    // Stopped after the step in hand: exactly the steps before it are committed, and nothing ran after.
    expect(countOf('committed WHERE run_id = ?', runId)).toBe(stoppedAt);
    expect(deliveries(runId)).toHaveLength(stoppedAt);
    expect(stoppedAt).toBeLessThan(100);
    expect(read<{ status: string }>('SELECT status FROM runs WHERE id = ?', runId)[0]!.status).toBe('paused');
    // Started again while paused, it does not start.
    const still = await exitOf(agent(runId, { STEPS: '100', MODEL_MS: '0' }));
    expect([still.code, countOf('committed WHERE run_id = ?', runId)]).toEqual([3, stoppedAt]);
    expect((await api('POST', `/api/v1/runs/${runId}/resume`, OPERATOR, {})).status).toBe(200);
    const done = await exitOf(agent(runId, { STEPS: '100', MODEL_MS: '0' }));
    expect(done.code, done.stderr).toBe(0);
    expect(countOf('committed WHERE run_id = ?', runId)).toBe(100);
    expect(deliveries(runId)).toHaveLength(100);
  });

  it("a viewer token's writes are refused with one line and nothing written", async () => {
    const out = await exitOf(agent('py-viewer', { WAYBILL_TOKEN: VIEWER, STEPS: '3' }));
    expect(out.code).toBe(1);
    expect(out.stderr.trim().split('\n')).toEqual([
      expect.stringMatching(
        /^waybill_client\.example: POST .*\/checkpoint\/py-viewer\/begin: FORBIDDEN \(HTTP 403\): the viewer role may not do this/,
      ),
    ]);
    expect(
      countOf("runs WHERE id = 'py-viewer'") +
        countOf("claims WHERE run_id = 'py-viewer'") +
        countOf("committed WHERE run_id = 'py-viewer'"),
    ).toBe(0);
  });

  it('a run-scoped token runs its own run, and is refused on another run with one line and nothing written', async () => {
    const minted = await api('POST', '/api/v1/runs/py-scoped/tokens', OPERATOR, { ttl: '1h' });
    expect(minted.status).toBe(201);
    const own = await exitOf(agent('py-scoped', { WAYBILL_TOKEN: minted.body.token, STEPS: '5', MODEL_MS: '0' }));
    expect(own.code, own.stderr).toBe(0);
    expect(countOf("committed WHERE run_id = 'py-scoped'")).toBe(5);
    const other = await exitOf(agent('py-not-mine', { WAYBILL_TOKEN: minted.body.token, STEPS: '5', MODEL_MS: '0' }));
    expect(other.code).toBe(1);
    expect(other.stderr.trim().split('\n')).toEqual([
      expect.stringMatching(
        /^waybill_client\.example: POST .*\/checkpoint\/py-not-mine\/begin: FORBIDDEN \(HTTP 403\): a run token for run py-scoped may not touch run py-not-mine$/,
      ),
    ]);
    expect(countOf("runs WHERE id = 'py-not-mine'") + countOf("committed WHERE run_id = 'py-not-mine'")).toBe(0);
  });

  it('a wrong base URL or token is one clear line, not a traceback', async () => {
    const refused = await exitOf(agent('py-url', { WAYBILL_URL: 'http://127.0.0.1:9', STEPS: '3' }));
    expect(refused.code).toBe(1);
    expect(refused.stderr.trim().split('\n')).toEqual([
      expect.stringMatching(
        /^waybill_client\.example: cannot reach Waybill at http:\/\/127\.0\.0\.1:9: .*refused after 3 attempts \(is the dashboard running, and is WAYBILL_URL right\?\)$/i,
      ),
    ]);
    const notUrl = await exitOf(agent('py-url', { WAYBILL_URL: '127.0.0.1:3000', STEPS: '3' }));
    expect(notUrl.stderr.trim().split('\n')).toEqual([
      "waybill_client.example: base_url '127.0.0.1:3000' is not an http(s) URL such as http://127.0.0.1:3000 (WAYBILL_URL)",
    ]);
    const notApi = await exitOf(agent('py-url', { WAYBILL_URL: `${server.url}/elsewhere`, STEPS: '3' }));
    expect(notApi.stderr.trim().split('\n')).toEqual([
      expect.stringMatching(
        /the server answered HTTP 404 with text\/plain, not Waybill's JSON API \(check WAYBILL_URL\)$/,
      ),
    ]);
    const badToken = await exitOf(agent('py-url', { WAYBILL_TOKEN: 'not-a-token-of-this-server', STEPS: '3' }));
    expect(badToken.code).toBe(1);
    expect(badToken.stderr.trim().split('\n')).toEqual([
      expect.stringMatching(/: UNAUTHENTICATED \(HTTP 401\): sign in required/),
    ]);
    for (const out of [refused, notUrl, notApi, badToken]) expect(out.stderr).not.toMatch(/Traceback|urllib/);
    expect(countOf("runs WHERE id = 'py-url'")).toBe(0);
  });

  it("run_once(input=…) records the step's input beside its result; one that is not JSON or too long is refused before anything runs", async () => {
    const script = `
import logging, sys
from waybill_client import Checkpoint, InvalidInputError
from waybill_client import checkpoint as cp
logging.basicConfig(level=logging.WARNING, format="%(message)s")
ckpt = Checkpoint(sys.argv[1], "py-input", token=sys.argv[2], workflow="py-input", total_steps=3)
ran = []
def effect(n):
    def run():
        ran.append(n)
        return {"n": n}
    return run
print(ckpt.run_once("py-input:step:0", effect(0), step=0, input={"prompt": "héllo", "n": 0})[1], flush=True)
for bad in [float("nan"), object(), "x" * 16_383]:
    try:
        ckpt.run_once("py-input:step:1", effect(1), step=1, input=bad)
        print("ran?!", flush=True)
    except InvalidInputError as e:
        print("refused", str(e).split(" (")[0], flush=True)
# A client whose own check is looser than the server's: the server refuses the input after the side effect has
# run, and the result is committed without it rather than lost.
cp.INPUT_MAX_CHARS = 10 ** 6
print(ckpt.run_once("py-input:step:1", effect(1), step=1, input="y" * 20_000)[1], flush=True)
print(ckpt.run_once("py-input:step:2", effect(2), step=2)[1], flush=True)
print("ran", ran, flush=True)
`;
    const out = await exitOf(spawnCommand(python, ['-c', script, server.url, OPERATOR]));
    expect(out.code, out.stderr).toBe(0);
    expect(out.lines).toEqual([
      'executed',
      'refused input: must be a JSON value',
      'refused input: must be a JSON value',
      'refused input: must be at most 16,384 characters as JSON',
      'executed',
      'executed',
      'ran [0, 1, 2]',
    ]);
    expect(out.stderr).toMatch(/py-input:step:1: the input was not recorded \(.*INVALID_INPUT \(HTTP 400\)/);
    expect(
      read<{ step: number; input: string | null }>(
        'SELECT step, input_json AS input FROM committed WHERE run_id = ? ORDER BY step',
        'py-input',
      ),
    ).toEqual([
      { step: 0, input: '{"prompt":"héllo","n":0}' },
      { step: 1, input: null },
      { step: 2, input: null },
    ]);
    // Nothing claimed for the refused inputs, nothing left held, no failure recorded: they never ran.
    expect(countOf("claims WHERE run_id = 'py-input'")).toBe(0);
    expect(countOf("step_events WHERE run_id = 'py-input' AND outcome = 'failed'")).toBe(0);
    const step = await api('GET', '/api/v1/runs/py-input/steps/0', VIEWER);
    expect(step.body.committed.input).toEqual({ prompt: 'héllo', n: 0 });
  });

  it('the side effect is told when its lease is lost, and its commit is refused', async () => {
    const script = `
import sys, time
from waybill_client import Checkpoint, LeaseLostError
ckpt = Checkpoint(sys.argv[1], "py-lease", token=sys.argv[2], lease_ms=300)
def slow(ctx):
    print("claimed", ctx.idempotency_key, flush=True)
    for _ in range(200):
        if ctx.lease_lost:
            print("told", flush=True)
            break
        time.sleep(0.05)
    return {"late": True}
try:
    ckpt.run_once("py-lease:step:0", slow, step=0)
    print("committed?!", flush=True)
except LeaseLostError as e:
    print("refused", str(e).split(":")[0], flush=True)
`;
    const child = spawnCommand(python, ['-c', script, server.url, OPERATOR]);
    await child.waitForLine(/^claimed/);
    expect((await api('POST', '/api/v1/claims/expire', OPERATOR, { key: 'py-lease:step:0', force: true })).status).toBe(
      200,
    );
    const out = await exitOf(child);
    expect(out.lines).toEqual(['claimed py-lease:step:0', 'told', 'refused claim on py-lease']);
    expect(countOf("committed WHERE run_id = 'py-lease'")).toBe(0);
  });

  it('a step streams its text to its page and records the usage of a model call made without the gateway: counted once, however often it runs', async () => {
    const script = `
import sys
from waybill_client import Checkpoint, InvalidInputError
ckpt = Checkpoint(sys.argv[1], "py-usage", token=sys.argv[2], workflow="py-usage", total_steps=1)
tries = []
def ask(ctx):
    tries.append(ctx.attempt)
    ctx.stream("try %d: " % len(tries))
    ctx.stream("x" * 20_000)
    ctx.stream("")
    print("cost", ctx.record_usage(model="gpt-4o", input_tokens=1000, output_tokens=100, cached_tokens=200), flush=True)
    for bad in [dict(model="", input_tokens=1, output_tokens=1), dict(model="m", input_tokens=-1, output_tokens=1),
                dict(model="m", input_tokens=1, output_tokens=True), dict(model="m", input_tokens=1, output_tokens=1, cost_usd=-1.0),
                dict(model="m", input_tokens=1, output_tokens=1, cached_tokens=2)]:
        try:
            ctx.record_usage(**bad)
            print("recorded?!", flush=True)
        except InvalidInputError as e:
            print("refused", str(e).split(" (")[0].split(", not")[0], flush=True)
    print("cost", ctx.record_usage(model="own-model", input_tokens=5 * len(tries), output_tokens=1, cost_usd=0.5), flush=True)
    if len(tries) == 1:
        raise RuntimeError("the first execution fails after it streamed and recorded")
    return "asked"
try:
    ckpt.run_once("py-usage:step:0", ask, step=0)
except RuntimeError as e:
    print("failed", e, flush=True)
print(ckpt.run_once("py-usage:step:0", ask, step=0)[1], flush=True)
`;
    const out = await exitOf(spawnCommand(python, ['-c', script, server.url, OPERATOR]));
    expect(out.code, out.stderr).toBe(0);
    const refusals = [
      'refused model: must be a non-empty string',
      'refused input_tokens: must be a whole number >= 0',
      'refused output_tokens: must be a whole number >= 0',
      'refused cost_usd: must be a number >= 0',
      'refused cached_tokens: must be at most input_tokens',
    ];
    const execution = ['cost 0.00325', ...refusals, 'cost 0.5'];
    expect(out.lines).toEqual([
      ...execution,
      'failed the first execution fails after it streamed and recorded',
      ...execution,
      'executed',
    ]);
    const store = (await cache.waybillStore) as unknown as Store;
    // The second execution's text only: its seq 0 started the step's transcript over.
    expect(await store.readStepStream('py-usage', 0)).toMatchObject({ attempt: 1 });
    expect((await store.readStepStream('py-usage', 0))?.chunks.join('')).toBe(`try 2: ${'x'.repeat(20_000)}`);
    // Its reports over the first execution's, under the same keys: counted once, the last execution's.
    const usage = await runUsage(store, 'py-usage');
    expect(usage).toMatchObject({ calls: 2, inputTokens: 1010, outputTokens: 101, cachedTokens: 200, unpriced: 0 });
    expect(usage.costUsd).toBe(0.00325 + 0.5);
    expect(usage.bySteps.map((s) => [s.step, s.usage.calls])).toEqual([[0, 2]]);
  });
});
