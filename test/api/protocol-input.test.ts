/**
 * The checkpoint protocol's commit takes the step's `input`, through the real route handlers on a real port
 * and a real SQLite file: stored beside the result and shown on the step page's API; too long (the in-process
 * recorder's bound, INPUT_MAX_CHARS of JSON) is a 400 naming `input` with nothing written and the claim still
 * the client's, so the same token commits again; any other refusal of the body still names its field.
 */
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { INPUT_MAX_CHARS } from '../../lib/checkpoint/step-input';
import { type Answer, request } from '../support/http';
import { makeTempDir } from '../support/tmp';

const OPERATOR = 'protocol-input-operator-0123456';
const dir = makeTempDir('waybill-protocol-input-');
const DB = dir.file('w.db');
process.env.DATABASE_URL = `file:${DB}`;
process.env.WAYBILL_OPERATOR_TOKEN = OPERATOR;
process.env.WAYBILL_SQLITE_SYNC = 'normal';

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

const api = (method: string, path: string, body?: unknown): Promise<Answer> =>
  request(server.url, method, path, OPERATOR, body);
function rows(sql: string, ...args: unknown[]) {
  const db = new Database(DB, { readonly: true, fileMustExist: true });
  try {
    return db.prepare(sql).all(...args);
  } finally {
    db.close();
  }
}
const tables = () =>
  JSON.stringify(
    ['committed', 'claims', 'progress', 'step_events'].map((t) => rows(`SELECT * FROM ${t} ORDER BY rowid`)),
  );

describe('POST /api/v1/checkpoint/commit with an input', () => {
  it('stores the input beside the result; refuses one too long naming `input`, writing nothing and keeping the claim', async () => {
    const claim = async (n: number) => {
      const answer = await api('POST', '/api/v1/checkpoint/claim', { runId: 'pi', key: `pi:step:${n}`, step: n });
      expect(answer.body.outcome).toBe('claimed');
      return answer.body.token as string;
    };
    const token = await claim(0);
    const before = tables();
    const long = 'x'.repeat(INPUT_MAX_CHARS); // as JSON, two quotes longer than the bound
    const commit = (input: unknown, extra: Record<string, unknown> = {}) =>
      api('POST', '/api/v1/checkpoint/commit', {
        runId: 'pi',
        key: 'pi:step:0',
        token,
        result: { answer: 42 },
        step: 0,
        ...(input === undefined ? {} : { input }),
        ...extra,
      });

    const refused = await commit(long);
    expect(refused.status).toBe(400);
    expect(refused.body.error.code).toBe('INVALID_INPUT');
    expect(refused.body.error.fields).toEqual({
      input: [
        `must be at most 16,384 characters as JSON (this is 16,386); the claim is still yours: commit again with a smaller input or none`,
      ],
    });
    const typo = await commit({ prompt: 'hi' }, { inputs: 1 });
    expect([typo.status, typo.body.error.fields]).toEqual([400, { inputs: ['is not a known field'] }]);
    expect(tables()).toBe(before);
    expect(rows('SELECT token FROM claims WHERE idem_key = ?', 'pi:step:0')).toEqual([{ token }]);

    // The same token commits again, with an input within the bound: stored as JSON text beside the result.
    const done = await commit({ prompt: 'hello', n: 0, nested: [1, null, { k: 'v' }] });
    expect([done.status, done.body.committed]).toEqual([200, true]);
    expect(
      rows('SELECT input_json AS input, result_json AS result FROM committed WHERE idem_key = ?', 'pi:step:0'),
    ).toEqual([{ input: '{"prompt":"hello","n":0,"nested":[1,null,{"k":"v"}]}', result: '{"answer":42}' }]);
    const step = await api('GET', '/api/v1/runs/pi/steps/0');
    expect(step.status).toBe(200);
    expect(step.body.committed.input).toEqual({ prompt: 'hello', n: 0, nested: [1, null, { k: 'v' }] });

    // `null` is a JSON value and is recorded; no input records none; the bound itself is accepted.
    const t1 = await claim(1);
    const t2 = await claim(2);
    const edge = 'y'.repeat(INPUT_MAX_CHARS - 2);
    for (const [n, t, input] of [
      [1, t1, null],
      [2, t2, edge],
    ] as const) {
      const answer = await api('POST', '/api/v1/checkpoint/commit', {
        runId: 'pi',
        key: `pi:step:${n}`,
        token: t,
        result: n,
        step: n,
        input,
      });
      expect(answer.status).toBe(200);
    }
    const t3 = await claim(3);
    expect(
      (await api('POST', '/api/v1/checkpoint/commit', { runId: 'pi', key: 'pi:step:3', token: t3, result: 3, step: 3 }))
        .status,
    ).toBe(200);
    expect(rows('SELECT step, length(input_json) AS n FROM committed WHERE run_id = ? ORDER BY step', 'pi')).toEqual([
      { step: 0, n: 52 },
      { step: 1, n: 4 },
      { step: 2, n: INPUT_MAX_CHARS },
      { step: 3, n: null },
    ]);
  });
});
