/**
 * Approvals and signals over real HTTP (the route handlers on a real port, a real SQLite file, a real worker
 * in process): an operator's approval delivers review-and-send's message exactly once; a viewer's approval,
 * a cross-site one and a second decision are refused with nothing written.
 */
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Worker } from '../../lib/engine/worker';
import { builtinRegistry } from '../../lib/engine/workflows';
import { readOutbox } from '../../lib/engine/workflows/outbox';
import { openStore } from '../../lib/store/index';
import type { Store } from '../../lib/store/types';
import { request, type Answer } from '../support/http';
import { makeTempDir } from '../support/tmp';

const OPERATOR = 'waits-operator-token-0123456789ab';
const VIEWER = 'waits-viewer-token-0123456789abcd';
const dir = makeTempDir('waybill-api-waits-');
const DB = dir.file('w.db');
process.env.DATABASE_URL = `file:${DB}`;
process.env.WAYBILL_OPERATOR_TOKEN = OPERATOR;
process.env.WAYBILL_VIEWER_TOKEN = VIEWER;
process.env.WAYBILL_SESSION_SECRET = 'waits-suite-session-secret-01234';

const { startRouteServer } = await import('../support/route-server');
const cache = globalThis as { waybillStore?: Promise<{ close(): Promise<void> }> };
let server: Awaited<ReturnType<typeof startRouteServer>>;
let store: Store;
let worker: Worker;
let working: Promise<void>;

beforeAll(async () => {
  server = await startRouteServer();
  store = await openStore(`file:${DB}`, { synchronous: 'normal' });
  worker = new Worker({ store, registry: builtinRegistry({ dataDir: dir.path }), pollMs: 20, heartbeatMs: 100 });
  working = worker.run();
});
afterAll(async () => {
  worker?.stop();
  await working;
  await store?.close();
  await server?.close();
  await (await cache.waybillStore?.catch(() => undefined))?.close();
  dir.remove();
});

const api = (method: string, path: string, token: string | null, body?: unknown): Promise<Answer> =>
  request(server.url, method, path, token, body);

async function until(probe: () => Promise<boolean>, what: string) {
  for (let i = 0; i < 1500; i++) {
    if (await probe()) return;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`timed out waiting for ${what}`);
}
const statusOf = async (id: string) => (await store.getRun(id))?.status;
const rows = (sql: string) => {
  const db = new Database(DB, { readonly: true });
  try {
    return db.prepare(sql).all();
  } finally {
    db.close();
  }
};

describe('POST /api/v1/runs/:id/approvals/:name', () => {
  it('approves once: the message is delivered exactly once; viewer, cross-site and second decisions are refused', async () => {
    const started = await api('POST', '/api/v1/runs', OPERATOR, {
      workflow: 'review-and-send',
      input: {},
      id: 'api-send',
    });
    expect(started.status).toBe(201);
    await until(async () => (await statusOf('api-send')) === 'waiting', 'the run to wait');

    const detail = await api('GET', '/api/v1/runs/api-send', VIEWER);
    expect(detail.body.run.status).toBe('waiting');
    expect(detail.body.waits).toHaveLength(1);
    expect(detail.body.waits[0]).toMatchObject({ name: 'review', kind: 'approval', decidedAt: null, dueAt: null });
    expect(detail.body.waits[0].details.message).toMatch(/^summary of/);

    const before = JSON.stringify(rows('SELECT * FROM waits')) + JSON.stringify(rows('SELECT * FROM audit'));
    const viewer = await api('POST', '/api/v1/runs/api-send/approvals/review', VIEWER, { approve: true });
    expect([viewer.status, viewer.body.error.code]).toEqual([403, 'FORBIDDEN']);
    const crossSite = await fetch(`${server.url}/api/v1/runs/api-send/approvals/review`, {
      method: 'POST',
      body: JSON.stringify({ approve: true }),
      headers: {
        authorization: `Bearer ${OPERATOR}`,
        'content-type': 'application/json',
        origin: 'http://evil.example',
        'sec-fetch-site': 'cross-site',
      },
    });
    expect(crossSite.status).toBe(403);
    const unknown = await api('POST', '/api/v1/runs/api-send/approvals/nope', OPERATOR, { approve: true });
    expect(unknown.status).toBe(404);
    const bad = await api('POST', '/api/v1/runs/api-send/approvals/review', OPERATOR, { approve: 'yes' });
    expect([bad.status, Object.keys(bad.body.error.fields)]).toEqual([400, ['approve']]);
    const rejectNoNote = await api('POST', '/api/v1/runs/api-send/approvals/review', OPERATOR, { approve: false });
    expect([rejectNoNote.status, Object.keys(rejectNoNote.body.error.fields)]).toEqual([400, ['note']]);
    expect(JSON.stringify(rows('SELECT * FROM waits')) + JSON.stringify(rows('SELECT * FROM audit'))).toBe(before);

    const approved = await api('POST', '/api/v1/runs/api-send/approvals/review', OPERATOR, {
      approve: true,
      note: 'ok by me',
    });
    expect(approved.status).toBe(200);
    expect(approved.body.wait).toMatchObject({
      decision: { approved: true },
      decidedBy: 'operator token (api)',
      note: 'ok by me',
    });
    const again = await api('POST', '/api/v1/runs/api-send/approvals/review', OPERATOR, {
      approve: false,
      note: 'changed my mind',
    });
    expect([again.status, again.body.error.code]).toEqual([409, 'CONFLICT']);

    await until(async () => (await statusOf('api-send')) === 'completed', 'the run to complete');
    const outbox = readOutbox(dir.file('review-and-send.jsonl'));
    expect([outbox.delivered, outbox.duplicates, [...outbox.byKey.keys()]]).toEqual([1, 0, ['api-send:send']]);
    expect(rows("SELECT action, target, detail FROM audit WHERE action IN ('approve', 'reject')")).toEqual([
      { action: 'approve', target: 'api-send/review', detail: 'ok by me' },
    ]);
  });

  it('a signal over the API is kept for a run that has not reached its wait, and a second is 409', async () => {
    expect((await api('POST', '/api/v1/runs/nobody/signals/go', OPERATOR, { payload: 1 })).status).toBe(404);
    await store.createRun({ id: 'sig-run', workflow: 'no-such-workflow', inputJson: '{}', totalSteps: null });
    const sent = await api('POST', '/api/v1/runs/sig-run/signals/go', OPERATOR, { payload: { n: 1 } });
    expect([sent.status, sent.body.wait.decision]).toEqual([200, { payload: { n: 1 } }]);
    const twice = await api('POST', '/api/v1/runs/sig-run/signals/go', OPERATOR, { payload: { n: 2 } });
    expect(twice.status).toBe(409);
    expect((await store.getWait('sig-run', 'go'))!.decisionJson).toBe('{"payload":{"n":1}}');
    expect((await api('POST', '/api/v1/runs/sig-run/signals/go', VIEWER, { payload: 3 })).status).toBe(403);
  });
});
