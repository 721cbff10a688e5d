/**
 * GET /api/v1/runs/{id}/usage and GET /api/v1/workflows/{name}/usage over real HTTP (the route handlers on a
 * real port, a real SQLite file), the calls recorded by another store connection as the gateway records them:
 * a run's total, by step and by model; a workflow's over all its runs, by model; a call still pending counts
 * nothing. Viewers and operators read them, a run token may not; a bad parameter is a 400 naming it, an
 * unknown run or workflow a 404, and nothing is written.
 */
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ModelCallAnswer, ModelCallStart } from '../../lib/store/contract';
import { openSqliteStore } from '../../lib/store/sqlite';
import { type Answer, request } from '../support/http';
import { makeTempDir } from '../support/tmp';

const OPERATOR = 'usage-operator-token-0123456789ab';
const VIEWER = 'usage-viewer-token-0123456789abcd';
const dir = makeTempDir('waybill-usage-routes-');
const DB = dir.file('w.db');
process.env.DATABASE_URL = `file:${DB}`;
process.env.WAYBILL_OPERATOR_TOKEN = OPERATOR;
process.env.WAYBILL_VIEWER_TOKEN = VIEWER;
process.env.WAYBILL_SESSION_SECRET = 'usage-suite-session-secret-01234';

const { startRouteServer } = await import('../support/route-server');
const cache = globalThis as { waybillStore?: Promise<{ close(): Promise<void> }> };
let server: Awaited<ReturnType<typeof startRouteServer>>;
// The gateway's connection: a store of its own on the same file.
const gateway = openSqliteStore({ path: DB, synchronous: 'normal' });

async function call(start: Partial<ModelCallStart> & { runId: string }, paid: Partial<ModelCallAnswer>) {
  const begun = await gateway.beginModelCall({
    idemKey: null,
    step: null,
    api: 'openai.chat',
    model: null,
    fingerprint: 'f',
    framing: 'json',
    leaseMs: 60_000,
    ...start,
  });
  if (begun.kind !== 'lead') throw new Error('expected to lead');
  await gateway.completeModelCall(begun.callId, begun.token, {
    status: 200,
    headersJson: '{}',
    body: '{}',
    model: null,
    inputTokens: null,
    outputTokens: null,
    cachedTokens: null,
    costUsd: null,
    ...paid,
  });
}

beforeAll(async () => {
  server = await startRouteServer();
  await gateway.createRun({ id: 'u1', workflow: 'drafting', inputJson: '{}', totalSteps: null });
  await gateway.createRun({ id: 'u2', workflow: 'drafting', inputJson: '{}', totalSteps: null });
  await gateway.createRun({ id: 'u3', workflow: 'quiet', inputJson: '{}', totalSteps: null });
  await call(
    { runId: 'u1', idemKey: 'u1:step:0', step: 0 },
    { model: 'gpt-a', inputTokens: 1000, outputTokens: 200, cachedTokens: 400, costUsd: 0.5 },
  );
  await call(
    { runId: 'u1', idemKey: 'u1:step:2', step: 2 },
    { model: 'claude-b', inputTokens: 300, outputTokens: 100, cachedTokens: 0, costUsd: null },
  );
  // Sent without a key: in the ledger, under no step.
  await call({ runId: 'u1' }, { model: 'gpt-a', inputTokens: 10, outputTokens: 5, costUsd: 0.125 });
  await call(
    { runId: 'u2', idemKey: 'u2:step:0', step: 0 },
    { model: 'gpt-a', inputTokens: 100, outputTokens: 50, cachedTokens: 0, costUsd: 0.25 },
  );
  // Still asking upstream: nothing known of it yet.
  await gateway.beginModelCall({
    idemKey: 'u1:step:3',
    runId: 'u1',
    step: 3,
    api: 'openai.chat',
    model: 'gpt-a',
    fingerprint: 'f',
    framing: 'sse',
    leaseMs: 60_000,
  });
});
afterAll(async () => {
  await server?.close();
  await (await cache.waybillStore?.catch(() => undefined))?.close();
  await gateway.close();
  dir.remove();
});

const get = (path: string, token: string | null = VIEWER): Promise<Answer> => request(server.url, 'GET', path, token);
const usage = (calls: number, i: number, o: number, c: number, usd: number, unpriced: number) => ({
  calls,
  inputTokens: i,
  outputTokens: o,
  cachedTokens: c,
  costUsd: usd,
  unpriced,
});
const byModel = (body: { byModel: { model: string | null }[] }) =>
  [...body.byModel].sort((a, b) => String(a.model).localeCompare(String(b.model)));

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

describe('GET /api/v1/runs/{id}/usage', () => {
  it("answers the run's ledger: in total, by step (unkeyed calls under null) and by model", async () => {
    const answer = await get('/api/v1/runs/u1/usage');
    expect(answer.status).toBe(200);
    const { byModel: _, ...rest } = answer.body;
    expect(rest).toEqual({
      runId: 'u1',
      ...usage(3, 1310, 305, 400, 0.625, 1),
      bySteps: [
        { step: null, usage: usage(1, 10, 5, 0, 0.125, 0) },
        { step: 0, usage: usage(1, 1000, 200, 400, 0.5, 0) },
        { step: 2, usage: usage(1, 300, 100, 0, 0, 1) },
      ],
    });
    expect(byModel(answer.body)).toEqual([
      { model: 'claude-b', usage: usage(1, 300, 100, 0, 0, 1) },
      { model: 'gpt-a', usage: usage(2, 1010, 205, 400, 0.625, 0) },
    ]);
    // A run with no call is zeros, not a 404.
    expect((await get('/api/v1/runs/u3/usage')).body).toEqual({
      runId: 'u3',
      ...usage(0, 0, 0, 0, 0, 0),
      bySteps: [],
      byModel: [],
    });
  });
});

describe('GET /api/v1/workflows/{name}/usage', () => {
  it("answers the workflow's ledger over all its runs, by model in name order", async () => {
    const answer = await get('/api/v1/workflows/drafting/usage');
    expect([answer.status, answer.body]).toEqual([
      200,
      {
        workflow: 'drafting',
        ...usage(4, 1410, 355, 400, 0.875, 1),
        byModel: [
          { model: 'claude-b', usage: usage(1, 300, 100, 0, 0, 1) },
          { model: 'gpt-a', usage: usage(3, 1110, 255, 400, 0.875, 0) },
        ],
      },
    ]);
    const none = { ...usage(0, 0, 0, 0, 0, 0), byModel: [] };
    // A workflow whose runs made no call, and a built-in that has no run yet: zeros.
    expect((await get('/api/v1/workflows/quiet/usage', OPERATOR)).body).toEqual({ workflow: 'quiet', ...none });
    expect((await get('/api/v1/workflows/agent-batch/usage')).body).toEqual({ workflow: 'agent-batch', ...none });
  });
});

describe('the usage routes', () => {
  it('are for viewers and operators: no token is 401, a run token (even its own run’s) is 403', async () => {
    expect((await get('/api/v1/runs/u1/usage', OPERATOR)).status).toBe(200);
    expect((await get('/api/v1/runs/u1/usage', null)).status).toBe(401);
    expect((await get('/api/v1/workflows/drafting/usage', null)).status).toBe(401);
    const minted = await request(server.url, 'POST', '/api/v1/runs/u1/tokens', OPERATOR, {});
    expect(minted.status).toBe(201);
    for (const path of ['/api/v1/runs/u1/usage', '/api/v1/workflows/drafting/usage']) {
      const own = await get(path, minted.body.token);
      expect([path, own.status, own.body.error.code]).toEqual([path, 403, 'FORBIDDEN']);
    }
  });

  it('refuse a bad parameter with a 400 naming it, an unknown run or workflow with a 404, and write nothing', async () => {
    const before = snapshot();
    const bad = await get('/api/v1/workflows/Not_A_Name/usage');
    expect([bad.status, bad.body.error.code, bad.body.error.fields]).toEqual([
      400,
      'INVALID_INPUT',
      { name: ['must be a workflow name (1-64 lowercase letters, digits and dashes)'] },
    ]);
    const longId = await get(`/api/v1/runs/${'x'.repeat(600)}/usage`);
    expect([longId.status, longId.body.error.code, Object.keys(longId.body.error.fields)]).toEqual([
      400,
      'INVALID_INPUT',
      ['id'],
    ]);
    for (const [path, message] of [
      ['/api/v1/runs/nope/usage', 'run nope not found'],
      ['/api/v1/workflows/never-heard/usage', 'workflow never-heard not found'],
    ]) {
      const missing = await get(path!);
      expect([path, missing.status, missing.body.error.code, missing.body.error.message]).toEqual([
        path,
        404,
        'NOT_FOUND',
        message,
      ]);
    }
    expect(snapshot()).toBe(before);
  });
});
