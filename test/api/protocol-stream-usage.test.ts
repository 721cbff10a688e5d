/**
 * POST /api/v1/checkpoint/stream and /usage through the real route handlers on a real port and a real SQLite
 * file: the claim's holder appends to its step's transcript and records usage in the run's ledger (priced by
 * WAYBILL_GATEWAY_PRICES when no cost is given; the same report sent again writes over itself); a stale token is
 * 409 LEASE_LOST, a bad body 400 naming its field, a run token on another run 403, each with nothing written.
 */
import { writeFileSync } from 'node:fs';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Answer, request } from '../support/http';
import { makeTempDir } from '../support/tmp';

const OPERATOR = 'stream-usage-operator-0123456789';
const dir = makeTempDir('waybill-stream-usage-');
const DB = dir.file('w.db');
writeFileSync(
  dir.file('prices.json'),
  JSON.stringify({ dated: 'test', models: { 'm-1': { input: 2, cachedInput: 1, output: 10 } } }),
);
process.env.DATABASE_URL = `file:${DB}`;
process.env.WAYBILL_OPERATOR_TOKEN = OPERATOR;
process.env.WAYBILL_SESSION_SECRET = 'stream-usage-session-secret-0123';
process.env.WAYBILL_SQLITE_SYNC = 'normal';
process.env.WAYBILL_GATEWAY_PRICES = dir.file('prices.json');

const { startRouteServer } = await import('../support/route-server');
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

const api = (method: string, path: string, body?: unknown, token: string | null = OPERATOR): Promise<Answer> =>
  request(server.url, method, path, token, body);
function rows(sql: string, ...args: unknown[]) {
  const db = new Database(DB, { readonly: true, fileMustExist: true });
  try {
    return db.prepare(sql).all(...args);
  } finally {
    db.close();
  }
}
const tables = () =>
  JSON.stringify(['step_streams', 'model_calls'].map((t) => rows(`SELECT * FROM ${t} ORDER BY rowid`)));
const claim = async (runId: string, key: string, step?: number) => {
  const answer = await api('POST', '/api/v1/checkpoint/claim', { runId, key, step });
  expect(answer.body.outcome).toBe('claimed');
  return answer.body.token as string;
};

describe('POST /api/v1/checkpoint/stream and /usage', () => {
  it("appends the holder's text to its step's transcript, in seq order, and refuses a stale token or bad body", async () => {
    const token = await claim('su', 'su:step:3', 3);
    const chunk = (seq: number, text: unknown, extra: Record<string, unknown> = {}) =>
      api('POST', '/api/v1/checkpoint/stream', { runId: 'su', key: 'su:step:3', token, seq, text, ...extra });
    const first = await chunk(0, 'Hel');
    expect([first.status, first.body]).toEqual([
      200,
      { key: 'su:step:3', streamed: true, step: 3, attempt: 1, seq: 0 },
    ]);
    expect((await chunk(2, '!')).status).toBe(200);
    expect((await chunk(1, 'lo')).status).toBe(200);
    // Sent again after a lost answer: the chunk replaces itself.
    expect((await chunk(1, 'lo')).status).toBe(200);
    const before = tables();

    const stale = await chunk(3, 'late', { token: 'not-the-token' });
    expect([stale.status, stale.body.error.code]).toEqual([409, 'LEASE_LOST']);
    expect(stale.body.error.message).toContain('the claim is not held by this token; nothing was streamed');
    const bad = await chunk(-1, 5);
    expect([bad.status, bad.body.error.fields]).toEqual([400, { seq: ['must be ≥ 0'], text: ['must be a string'] }]);
    const nul = await chunk(3, 'a\u0000b');
    expect([nul.status, nul.body.error.code]).toEqual([400, 'INVALID_INPUT']);
    expect(nul.body.error.message).toContain('text must not contain NUL characters');
    // A claim without a step number has no page to show its text on.
    const unnumbered = await claim('su', 'su:free');
    const nowhere = await api('POST', '/api/v1/checkpoint/stream', {
      runId: 'su',
      key: 'su:free',
      token: unnumbered,
      seq: 0,
      text: 'x',
    });
    expect([nowhere.status, nowhere.body.error.code]).toEqual([400, 'INVALID_INPUT']);
    expect(tables()).toBe(before);

    expect(rows('SELECT seq, text FROM step_streams WHERE run_id = ? ORDER BY seq', 'su')).toEqual([
      { seq: 0, text: 'Hel' },
      { seq: 1, text: 'lo' },
      { seq: 2, text: '!' },
    ]);
  });

  it("records usage for the holder's step, priced by the table, once per n; refuses a stale token, a bad body, another run", async () => {
    const token = await claim('uu', 'uu:step:0', 0);
    const report = (n: number, extra: Record<string, unknown>) =>
      api('POST', '/api/v1/checkpoint/usage', { runId: 'uu', key: 'uu:step:0', token, n, ...extra });
    const priced = await report(0, { model: 'm-1', inputTokens: 1000, outputTokens: 100, cachedTokens: 200 });
    expect([priced.status, priced.body]).toEqual([
      200,
      { key: 'uu:step:0', recorded: true, usageKey: 'uu:step:0:usage:1:0', step: 0, costUsd: 0.0028 },
    ]);
    expect((await report(1, { model: 'other', inputTokens: 5, outputTokens: 1, costUsd: 0.5 })).status).toBe(200);
    // The same report sent again (a lost answer): written over itself, counted once.
    expect((await report(1, { model: 'other', inputTokens: 5, outputTokens: 1, costUsd: 0.5 })).status).toBe(200);
    const before = tables();

    const stale = await api('POST', '/api/v1/checkpoint/usage', {
      runId: 'uu',
      key: 'uu:step:0',
      token: 'not-the-token',
      n: 2,
      model: 'm-1',
      inputTokens: 1,
      outputTokens: 1,
    });
    expect([stale.status, stale.body.error.code]).toEqual([409, 'LEASE_LOST']);
    const bad = await report(2, { model: '', inputTokens: -1, outputTokens: 1.5, cachedTokens: 0, costUsd: -1 });
    expect([bad.status, bad.body.error.fields]).toEqual([
      400,
      {
        model: ['must not be empty'],
        inputTokens: ['must be ≥ 0'],
        outputTokens: ['must be a whole number'],
        costUsd: ['must be ≥ 0'],
      },
    ]);
    const cached = await report(2, { model: 'm-1', inputTokens: 1, outputTokens: 1, cachedTokens: 2 });
    expect([cached.status, cached.body.error.fields]).toEqual([
      400,
      { cachedTokens: ['must be at most inputTokens (1): cached tokens are part of the input'] },
    ]);
    const missing = await report(2, { inputTokens: 1 });
    expect(missing.body.error.fields).toEqual({ model: ['is required'], outputTokens: ['is required'] });
    const minted = await api('POST', '/api/v1/runs/uu-other/tokens', {});
    expect(minted.status).toBe(201);
    const other = await api(
      'POST',
      '/api/v1/checkpoint/usage',
      { runId: 'uu', key: 'uu:step:0', token, n: 2, model: 'm-1', inputTokens: 1, outputTokens: 1 },
      minted.body.token,
    );
    expect([other.status, other.body.error.code]).toEqual([403, 'FORBIDDEN']);
    expect(tables()).toBe(before);

    expect(
      rows(
        'SELECT idem_key AS key, step, api, state, model, input_tokens AS i, output_tokens AS o, cached_tokens AS c, cost_usd AS usd FROM model_calls ORDER BY idem_key',
      ),
    ).toEqual([
      {
        key: 'uu:step:0:usage:1:0',
        step: 0,
        api: 'recorded',
        state: 'complete',
        model: 'm-1',
        i: 1000,
        o: 100,
        c: 200,
        usd: 0.0028,
      },
      {
        key: 'uu:step:0:usage:1:1',
        step: 0,
        api: 'recorded',
        state: 'complete',
        model: 'other',
        i: 5,
        o: 1,
        c: 0,
        usd: 0.5,
      },
    ]);
  });
});
