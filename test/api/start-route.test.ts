/**
 * POST /api/v1/runs, the route handler itself on a real SQLite file, started twice under one id: the same
 * workflow and input is 200 with the run and `existed: true`, writing no event and no audit line; another
 * input or workflow is 409 CONFLICT naming what differs, writing nothing.
 */
import { afterAll, describe, expect, it } from 'vitest';
import type { Store } from '../../lib/store/contract';
import { openSqliteStore } from '../../lib/store/sqlite';
import { makeTempDir } from '../support/tmp';

const dir = makeTempDir('waybill-start-route-');
const OPERATOR = 'operator-token-for-start-0123456';
process.env.DATABASE_URL = `file:${dir.file('w.db')}`;
process.env.WAYBILL_VIEWER_TOKEN = 'viewer-token-for-start-0123456';
process.env.WAYBILL_OPERATOR_TOKEN = OPERATOR;
const { POST } = await import('../../app/api/v1/runs/route');
const cache = globalThis as { waybillStore?: Promise<unknown> };

afterAll(async () => {
  await ((await cache.waybillStore) as Store | undefined)?.close();
  dir.remove();
});

const start = async (body: unknown, headers: Record<string, string> = {}) => {
  const response = await POST(
    new Request('http://waybill.internal:3000/api/v1/runs', {
      method: 'POST',
      headers: {
        host: 'waybill.internal:3000',
        authorization: `Bearer ${OPERATOR}`,
        'content-type': 'application/json',
        ...headers,
      },
      body: JSON.stringify(body),
    }),
  );
  return { status: response.status, body: await response.json() };
};

/** The runs, the run's events and the audit log, read beside the server's store. */
function state() {
  const store = openSqliteStore({ path: dir.file('w.db'), synchronous: 'normal' });
  try {
    const all = (sql: string) => store.db.prepare(sql).all();
    return {
      runs: all('SELECT id, workflow, input_json FROM runs ORDER BY id'),
      events: all("SELECT detail FROM step_events WHERE run_id = 'nightly-7'"),
      audit: all('SELECT action, target FROM audit'),
    };
  } finally {
    void store.close();
  }
}

describe('POST /api/v1/runs with an id that exists', () => {
  it('answers the same start with the run (200, existed) and refuses another (409), writing nothing', async () => {
    const first = await start({ workflow: 'agent-batch', input: { count: 3 }, id: 'nightly-7' });
    expect(first.status).toBe(201);
    expect(first.body.existed).toBe(false);
    const before = state();
    expect(before).toEqual({
      runs: [{ id: 'nightly-7', workflow: 'agent-batch', input_json: '{"count":3,"latencyMs":50,"failureRate":0}' }],
      events: [{ detail: 'started by operator token (api)' }],
      audit: [{ action: 'start', target: 'nightly-7' }],
    });

    // A default written out is the same parsed input.
    const again = await start({ workflow: 'agent-batch', input: { latencyMs: 50, count: 3 }, id: 'nightly-7' });
    expect(again.status).toBe(200);
    expect(again.body).toEqual({ run: first.body.run, existed: true });
    expect(state()).toEqual(before);

    const otherInput = await start({ workflow: 'agent-batch', input: { count: 4 }, id: 'nightly-7' });
    expect(otherInput.status).toBe(409);
    expect(otherInput.body.error).toMatchObject({
      code: 'CONFLICT',
      message: 'run nightly-7 exists with another input: input.count is 3, not 4',
    });
    const otherWorkflow = await start({ workflow: 'review-and-send', input: {}, id: 'nightly-7' });
    expect(otherWorkflow.status).toBe(409);
    expect(otherWorkflow.body.error).toMatchObject({
      code: 'CONFLICT',
      message: 'run nightly-7 exists with another workflow: it is agent-batch, not review-and-send',
    });
    expect(state()).toEqual(before);
  });
});

describe('POST /api/v1/runs with a priority', () => {
  it('stores the priority, audits it, and refuses one that is not a whole number in range, writing nothing', async () => {
    const started = await start({ workflow: 'agent-batch', input: { count: 1 }, id: 'urgent-1', priority: 10 });
    expect(started.status).toBe(201);
    expect(started.body.run).toMatchObject({ id: 'urgent-1', priority: 10 });
    const before = state();
    expect(before.audit).toContainEqual({ action: 'start', target: 'urgent-1' });
    for (const [priority, message] of [
      [1.5, 'must be a whole number'],
      [1001, 'must be at most 1000'],
      ['high', 'must be a whole number'],
    ] as const) {
      const refused = await start({ workflow: 'agent-batch', input: { count: 1 }, id: 'urgent-2', priority });
      expect(refused.status, String(priority)).toBe(400);
      expect(JSON.stringify(refused.body.error)).toContain('priority');
      expect(JSON.stringify(refused.body.error)).toContain(message);
    }
    expect(state()).toEqual(before);
  });
});

describe('POST /api/v1/runs with a trace context', () => {
  const traceOf = (id: string) => {
    const store = openSqliteStore({ path: dir.file('w.db'), synchronous: 'normal' });
    try {
      return (store.db.prepare('SELECT traceparent FROM runs WHERE id = ?').get(id) as { traceparent: string | null })
        .traceparent;
    } finally {
      void store.close();
    }
  };
  const A = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
  const B = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';

  it('keeps the body field over the header, the header alone, and ignores a malformed header', async () => {
    expect(
      (await start({ workflow: 'agent-batch', input: { count: 1 }, id: 'tp-1', traceparent: A }, { traceparent: B }))
        .status,
    ).toBe(201);
    expect((await start({ workflow: 'agent-batch', input: { count: 1 }, id: 'tp-2' }, { traceparent: B })).status).toBe(
      201,
    );
    expect(
      (await start({ workflow: 'agent-batch', input: { count: 1 }, id: 'tp-3' }, { traceparent: 'garbage' })).status,
    ).toBe(201);
    expect([traceOf('tp-1'), traceOf('tp-2'), traceOf('tp-3')]).toEqual([A, B, null]);
  });

  it('refuses a malformed body field with 400 naming it, writing nothing', async () => {
    const before = state();
    for (const [traceparent, message] of [
      ['00-abc-def-01', 'must be a W3C traceparent'],
      ['00-00000000000000000000000000000000-b7ad6b7169203331-01', 'all-zero trace id'],
      ['ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01', 'version ff'],
      [42, 'string'],
    ] as const) {
      const refused = await start({ workflow: 'agent-batch', input: { count: 1 }, id: 'tp-bad', traceparent });
      expect(refused.status, String(traceparent)).toBe(400);
      expect(JSON.stringify(refused.body.error)).toContain('traceparent');
      expect(JSON.stringify(refused.body.error)).toContain(message);
    }
    expect(state()).toEqual(before);
  });
});
