/**
 * Run tokens over real HTTP (the route handlers on a real port, a real SQLite file): minted by an operator
 * through POST /api/v1/runs/{id}/tokens and by `waybill token`, they drive the checkpoint protocol of their
 * own run, and every other request is 403 with nothing written: every other route of the API, and every
 * protocol call naming another run or another run's keys.
 */

import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Answer, request } from '../support/http';
import { makeTempDir } from '../support/tmp';

const OPERATOR = 'tokens-operator-token-0123456789';
const VIEWER = 'tokens-viewer-token-0123456789ab';
const SECRET = 'tokens-suite-session-secret-0123';
const dir = makeTempDir('waybill-run-tokens-');
const DB = dir.file('w.db');
process.env.DATABASE_URL = `file:${DB}`;
process.env.WAYBILL_OPERATOR_TOKEN = OPERATOR;
process.env.WAYBILL_VIEWER_TOKEN = VIEWER;
process.env.WAYBILL_SESSION_SECRET = SECRET;
// Small bounds, so a test reaches them with a handful of requests.
process.env.WAYBILL_RUN_TOKEN_MAX_KEYS = '5';
process.env.WAYBILL_RUN_TOKEN_MAX_BYTES = '4096';

const { startRouteServer } = await import('../support/route-server');
const { ROUTES } = await import('../../lib/api/openapi');
const cache = globalThis as { waybillStore?: Promise<{ close(): Promise<void> }> };
let server: Awaited<ReturnType<typeof startRouteServer>>;

beforeAll(async () => {
  server = await startRouteServer();
});
afterAll(async () => {
  await server?.close();
  await (await cache.waybillStore?.catch(() => undefined))?.close();
  dir.remove();
});

const api = (method: string, path: string, token: string | null, body?: unknown): Promise<Answer> =>
  request(server.url, method, path, token, body);

/** Every table's rows, to show a refused request wrote nothing. */
function snapshot(): string {
  const db = new Database(DB, { readonly: true });
  try {
    const tables = (
      db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").all() as { name: string }[]
    ).map((t) => t.name);
    return JSON.stringify(tables.map((t) => [t, db.prepare(`SELECT * FROM "${t}"`).raw().all()]));
  } finally {
    db.close();
  }
}

/**
 * The CLI as a child process, awaited rather than run with spawnSync: a blocked event loop stalls this process's
 * route server too, and its keep-alive sockets then close under the next request (ECONNRESET).
 */
function waybill(args: string[], env: NodeJS.ProcessEnv = process.env) {
  const bin = fileURLToPath(new URL('../../bin/waybill.mjs', import.meta.url));
  return new Promise<{ status: number | null; stdout: string; stderr: string }>((resolve, reject) => {
    const child = spawn(process.execPath, [bin, ...args], { env });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('error', reject);
    child.on('close', (status) => resolve({ status, stdout, stderr }));
  });
}

const mint = async (runId: string, ttl?: string) => {
  const answer = await api('POST', `/api/v1/runs/${runId}/tokens`, OPERATOR, ttl ? { ttl } : {});
  expect(answer.status).toBe(201);
  return answer.body as { token: string; runId: string; expiresAt: number };
};

describe('run-scoped tokens', () => {
  it('are minted by an operator only, with a lifetime, and audited', async () => {
    const before = Date.now() / 1000;
    const minted = await mint('tok-a', '2h');
    expect(minted.runId).toBe('tok-a');
    expect(minted.expiresAt).toBeGreaterThanOrEqual(Math.floor(before + 7200));
    expect(minted.expiresAt).toBeLessThanOrEqual(Math.ceil(Date.now() / 1000 + 7200));
    expect((await api('POST', '/api/v1/runs/tok-a/tokens', VIEWER, {})).status).toBe(403);
    expect((await api('POST', '/api/v1/runs/tok-a/tokens', null, {})).status).toBe(401);
    expect((await api('POST', '/api/v1/runs/tok-a/tokens', minted.token, {})).status).toBe(403);
    const bad = await api('POST', '/api/v1/runs/tok-a/tokens', OPERATOR, { ttl: '90d' });
    expect([bad.status, bad.body.error.fields]).toEqual([400, { ttl: ['must be at most 30d'] }]);
    const db = new Database(DB, { readonly: true });
    expect(db.prepare("SELECT count(*) AS n FROM audit WHERE action = 'token' AND target = 'tok-a'").get()).toEqual({
      n: 1,
    });
    db.close();
  });

  it('drive the checkpoint protocol of their own run: begin, claim, renew, commit, release, progress, end, committed', async () => {
    const { token } = await mint('tok-a');
    expect(
      (
        await api('POST', '/api/v1/checkpoint/tok-a/begin', token, {
          workflow: 'sandboxed',
          totalSteps: 2,
          workerId: 'sb',
        })
      ).body,
    ).toMatchObject({ run: { status: 'running', created: true } });
    const first = await api('POST', '/api/v1/checkpoint/claim', token, {
      runId: 'tok-a',
      key: 'tok-a:step:0',
      step: 0,
      workerId: 'sb',
    });
    expect(first.body.outcome).toBe('claimed');
    expect(
      (await api('POST', '/api/v1/checkpoint/renew', token, { key: 'tok-a:step:0', token: first.body.token })).status,
    ).toBe(200);
    const committed = await api('POST', '/api/v1/checkpoint/commit', token, {
      runId: 'tok-a',
      key: 'tok-a:step:0',
      token: first.body.token,
      result: { n: 0 },
      step: 0,
      workerId: 'sb',
      progress: { step: 1, state: {} },
      next: { key: 'tok-a:step:1', step: 1 },
    });
    expect(committed.body).toMatchObject({ committed: true, next: { outcome: 'claimed' }, run: { status: 'running' } });
    expect(
      (
        await api('POST', '/api/v1/checkpoint/release', token, {
          runId: 'tok-a',
          key: 'tok-a:step:1',
          token: committed.body.next.token,
        })
      ).status,
    ).toBe(200);
    expect(
      (await api('PUT', '/api/v1/checkpoint/tok-a/progress', token, { step: 1, state: { processed: 1 } })).status,
    ).toBe(200);
    expect((await api('GET', '/api/v1/checkpoint/tok-a/progress', token)).body).toMatchObject({ step: 1 });
    expect((await api('GET', '/api/v1/runs/tok-a/committed', token)).body.committed).toHaveLength(1);
    expect(
      (await api('POST', '/api/v1/checkpoint/tok-a/end', token, { outcome: 'completed', workerId: 'sb' })).body,
    ).toEqual({ run: { id: 'tok-a', status: 'completed' } });
  });

  it("are refused (403, nothing written) on every other route, on another run, and on another run's keys", async () => {
    // Run tok-b, with a committed key and a live claim, written by the operator.
    const b0 = await api('POST', '/api/v1/checkpoint/claim', OPERATOR, { runId: 'tok-b', key: 'tok-b:0', step: 0 });
    await api('POST', '/api/v1/checkpoint/commit', OPERATOR, {
      runId: 'tok-b',
      key: 'tok-b:0',
      token: b0.body.token,
      result: 'secret of b',
    });
    const b1 = await api('POST', '/api/v1/checkpoint/claim', OPERATOR, { runId: 'tok-b', key: 'tok-b:1', step: 1 });
    const { token } = await mint('tok-a');
    const before = snapshot();

    const refusals: string[] = [];
    const refuse = async (method: string, path: string, body?: unknown) => {
      const answer = await api(method, path, token, body);
      if (answer.status !== 403 || answer.body?.error?.code !== 'FORBIDDEN')
        refusals.push(`${method} ${path} → ${answer.status} ${JSON.stringify(answer.body)}`);
    };
    // Every route in the API's own table that is not the protocol of tok-a: the operator's and the viewer's alike.
    const protocol = (path: string) => path.startsWith('/api/v1/checkpoint/') || path === '/api/v1/runs/{id}/committed';
    let others = 0;
    for (const route of ROUTES) {
      if (route.access === 'none' || protocol(route.path)) continue;
      others++;
      const path = route.path.replace('{id}', 'tok-a').replace('{runId}', 'tok-a').replace('{action}', 'cancel');
      await refuse(route.method.toUpperCase(), path, route.method === 'get' ? undefined : {});
    }
    // Eleven are the protocol's: committed, progress (get and put), begin, end, claim, renew, commit, release,
    // stream and usage.
    expect(others).toBe(ROUTES.filter((r) => r.access !== 'none').length - 11);
    // The protocol, for another run.
    await refuse('POST', '/api/v1/checkpoint/tok-b/begin', { workflow: 'sandboxed' });
    await refuse('POST', '/api/v1/checkpoint/tok-b/end', { outcome: 'completed' });
    await refuse('GET', '/api/v1/checkpoint/tok-b/progress');
    await refuse('PUT', '/api/v1/checkpoint/tok-b/progress', { step: 9, state: {} });
    await refuse('GET', '/api/v1/runs/tok-b/committed');
    await refuse('POST', '/api/v1/checkpoint/claim', { runId: 'tok-b', key: 'tok-b:2' });
    await refuse('POST', '/api/v1/checkpoint/commit', {
      runId: 'tok-b',
      key: 'tok-b:1',
      token: b1.body.token,
      result: 'forged',
    });
    // Another run's keys, under its own run id: a committed result is not read, a live claim is not touched.
    await refuse('POST', '/api/v1/checkpoint/claim', { runId: 'tok-a', key: 'tok-b:0' });
    await refuse('POST', '/api/v1/checkpoint/claim', { runId: 'tok-a', key: 'tok-b:1' });
    await refuse('POST', '/api/v1/checkpoint/renew', { key: 'tok-b:1', token: b1.body.token });
    await refuse('POST', '/api/v1/checkpoint/release', { key: 'tok-b:1', token: b1.body.token });
    await refuse('POST', '/api/v1/checkpoint/commit', {
      runId: 'tok-a',
      key: 'tok-b:1',
      token: b1.body.token,
      result: 'forged',
    });
    await refuse('POST', '/api/v1/checkpoint/commit', {
      runId: 'tok-a',
      key: 'tok-a:x',
      token: 'x'.repeat(20),
      result: 1,
      next: { key: 'tok-b:0' },
    });
    // Keys of no run yet: another run's next step, or one runs share by content, are not a run token's to claim.
    await refuse('POST', '/api/v1/checkpoint/claim', { runId: 'tok-a', key: 'tok-b:9' });
    await refuse('POST', '/api/v1/checkpoint/claim', { runId: 'tok-a', key: 'sha256-of-shared-input' });
    await refuse('POST', '/api/v1/checkpoint/claim', { runId: 'tok-a', key: 'tok-ab:0' });
    expect(refusals).toEqual([]);
    expect(snapshot()).toBe(before);
  });

  it("for run X may not write a step of run X:Y (run ids contain ':'), and X:Y's own worker then runs it", async () => {
    const { token } = await mint('acme');
    const before = snapshot();
    const forged = [
      await api('POST', '/api/v1/checkpoint/claim', token, { runId: 'acme', key: 'acme:nightly:step:0', step: 0 }),
      await api('POST', '/api/v1/checkpoint/commit', token, {
        runId: 'acme',
        key: 'acme:nightly:step:0',
        token: 'x'.repeat(20),
        result: 'forged',
      }),
      await api('POST', '/api/v1/checkpoint/commit', token, {
        runId: 'acme',
        key: 'acme:step:0',
        token: 'x'.repeat(20),
        result: 1,
        next: { key: 'acme:nightly:step:1' },
      }),
    ];
    expect(forged.map((a) => [a.status, a.body.error.code])).toEqual([
      [403, 'FORBIDDEN'],
      [403, 'FORBIDDEN'],
      [403, 'FORBIDDEN'],
    ]);
    expect(forged[0]!.body.error.message).toBe(
      'a run token for run acme may use only its run\'s keys ("acme:step:<n>", or "acme:<name>" with no ":" in the name), not acme:nightly:step:0: that key is run acme:nightly\'s',
    );
    expect(snapshot()).toBe(before);
    // acme's own keys, named or numbered, are still its own.
    const own = await api('POST', '/api/v1/checkpoint/claim', token, { runId: 'acme', key: 'acme:fetch', step: 0 });
    expect(own.body.outcome).toBe('claimed');
    // The victim's worker runs both of its steps: nothing forged to skip, no forged claim to wait on.
    const { getStore } = await import('../../lib/data/store');
    const { Checkpoint } = await import('../../lib/checkpoint/checkpoint');
    const { runAgent } = await import('../../lib/checkpoint/agent');
    const effects: string[] = [];
    const report = await runAgent(
      ['a', 'b'],
      new Checkpoint(await getStore(), 'acme:nightly', { workerId: 'nightly-worker', claimTtlMs: 60_000 }),
      (item) => {
        effects.push(item);
        return item;
      },
    );
    expect([effects, report.executed, report.skipped]).toEqual([['a', 'b'], 2, 0]);
  });

  it("are read with the server's secret: `waybill token` with the same one works, with another it is 401", async () => {
    const cli = (secret: string) =>
      waybill(['token', '--run', 'tok-c', '--ttl', '1h', '--json'], { ...process.env, WAYBILL_SESSION_SECRET: secret });
    const same = await cli(SECRET);
    expect(same.status, same.stderr).toBe(0);
    const minted = JSON.parse(same.stdout) as { token: string; runId: string };
    expect(minted.runId).toBe('tok-c');
    // Minted from a terminal, audited like the API's: a credential was handed out.
    const db = new Database(DB, { readonly: true });
    try {
      expect(db.prepare("SELECT role, action, target FROM audit WHERE target = 'tok-c'").all()).toEqual([
        { role: 'local', action: 'token', target: 'tok-c' },
      ]);
    } finally {
      db.close();
    }
    expect((await api('PUT', '/api/v1/checkpoint/tok-c/progress', minted.token, { step: 1, state: {} })).status).toBe(
      200,
    );
    const rotated = JSON.parse((await cli('another-secret-entirely-0123')).stdout) as { token: string };
    const refused = await api('PUT', '/api/v1/checkpoint/tok-c/progress', rotated.token, { step: 2, state: {} });
    expect([refused.status, refused.body.error.code]).toEqual([401, 'UNAUTHENTICATED']);
    expect(refused.body.error.message).toMatch(/signed with a secret since rotated/);
    const usage = await waybill(['token']);
    expect([usage.status, usage.stderr.trim()]).toEqual([2, 'waybill token: missing --run ID: a token is for one run']);
    // WAYBILL_URL (what a worker hands its programs) is checked with the rest of the environment.
    const badUrl = await waybill(['token', '--run', 'tok-c'], { ...process.env, WAYBILL_URL: 'ftp://example' });
    expect([badUrl.status, badUrl.stderr.trim()]).toEqual([
      2,
      "waybill token: invalid environment: WAYBILL_URL: must be the dashboard's http(s) address, e.g. http://127.0.0.1:3000",
    ]);
  });

  it('write at most WAYBILL_RUN_TOKEN_MAX_KEYS keys and WAYBILL_RUN_TOKEN_MAX_BYTES bytes into their run', async () => {
    const { token } = await mint('tok-bound');
    const claim = (n: number) =>
      api('POST', '/api/v1/checkpoint/claim', token, { runId: 'tok-bound', key: `tok-bound:step:${n}`, step: n });
    const held: string[] = [];
    for (let n = 0; n < 5; n++) held.push((await claim(n)).body.token);
    const before = snapshot();
    const sixth = await claim(5);
    expect([sixth.status, sixth.body.error]).toEqual([
      413,
      {
        code: 'PAYLOAD_TOO_LARGE',
        message:
          'run tok-bound holds 5 keys; a run token may write at most 5 (WAYBILL_RUN_TOKEN_MAX_KEYS); nothing was written',
        limit: 5,
      },
    ]);
    // A key the run holds already is no new key: claiming it again is answered as before (held, by its claim).
    expect((await claim(0)).body.outcome).toBe('held');
    const big = await api('POST', '/api/v1/checkpoint/commit', token, {
      runId: 'tok-bound',
      key: 'tok-bound:step:0',
      token: held[0],
      result: 'x'.repeat(4100),
    });
    expect([big.status, big.body.error.code, big.body.error.limit]).toEqual([413, 'PAYLOAD_TOO_LARGE', 4096]);
    expect(big.body.error.message).toBe(
      'run tok-bound holds 0 bytes and this request would add 4,102; a run token may write at most 4,096 (WAYBILL_RUN_TOKEN_MAX_BYTES); nothing was written',
    );
    const state = await api('PUT', '/api/v1/checkpoint/tok-bound/progress', token, {
      step: 1,
      state: 'y'.repeat(4100),
    });
    expect([state.status, state.body.error.code]).toEqual([413, 'PAYLOAD_TOO_LARGE']);
    expect(snapshot()).toBe(before);
    // Within the bound, the claim is still the client's to commit.
    const small = await api('POST', '/api/v1/checkpoint/commit', token, {
      runId: 'tok-bound',
      key: 'tok-bound:step:0',
      token: held[0],
      result: 'ok',
    });
    expect(small.body.committed).toBe(true);
  });

  it('are refused once their run is finished, but for the end that says the client stopped', async () => {
    const { token } = await mint('tok-done');
    await api('POST', '/api/v1/checkpoint/tok-done/begin', token, { workflow: 'sandboxed', workerId: 'sb' });
    const first = await api('POST', '/api/v1/checkpoint/claim', token, { runId: 'tok-done', key: 'tok-done:step:0' });
    expect(first.body.outcome).toBe('claimed');
    expect((await api('POST', '/api/v1/runs/tok-done/cancel', OPERATOR, {})).status).toBe(200);
    const before = snapshot();
    const refused = [
      await api('POST', '/api/v1/checkpoint/claim', token, { runId: 'tok-done', key: 'tok-done:step:1' }),
      await api('POST', '/api/v1/checkpoint/commit', token, {
        runId: 'tok-done',
        key: 'tok-done:step:0',
        token: first.body.token,
        result: 'after the cancel',
      }),
      await api('POST', '/api/v1/checkpoint/renew', token, { key: 'tok-done:step:0', token: first.body.token }),
      await api('PUT', '/api/v1/checkpoint/tok-done/progress', token, { step: 1, state: {} }),
      await api('GET', '/api/v1/checkpoint/tok-done/progress', token),
      await api('POST', '/api/v1/checkpoint/tok-done/begin', token, { workflow: 'sandboxed', workerId: 'sb' }),
      await api('GET', '/api/v1/runs/tok-done/committed', token),
    ];
    expect(refused.map((a) => [a.status, a.body.error?.message])).toEqual(
      refused.map(() => [403, 'run tok-done is cancelled: its run tokens are refused']),
    );
    expect(snapshot()).toBe(before);
    const end = await api('POST', '/api/v1/checkpoint/tok-done/end', token, { outcome: 'stopped', workerId: 'sb' });
    expect([end.status, end.body]).toEqual([200, { run: { id: 'tok-done', status: 'cancelled' } }]);
  });
});
