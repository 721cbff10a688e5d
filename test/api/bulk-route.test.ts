/**
 * POST /api/v1/runs/bulk, the route handler itself with both role tokens, on a real SQLite file: the viewer's
 * token is a 403 that changes nothing; bad input is a 400 naming each field, changing nothing; the operator's
 * bulk cancels exactly the runs its filter matches, audited per run as the API's operator.
 */
import { afterAll, describe, expect, it } from 'vitest';
import type { Store } from '../../lib/store/contract';
import { openSqliteStore } from '../../lib/store/sqlite';
import { makeTempDir } from '../support/tmp';

const dir = makeTempDir('waybill-bulk-route-');
const VIEWER = 'viewer-token-for-bulk-0123456';
const OPERATOR = 'operator-token-for-bulk-0123456';
process.env.DATABASE_URL = `file:${dir.file('w.db')}`;
process.env.WAYBILL_VIEWER_TOKEN = VIEWER;
process.env.WAYBILL_OPERATOR_TOKEN = OPERATOR;
const { POST } = await import('../../app/api/v1/runs/bulk/route');
const cache = globalThis as { waybillStore?: Promise<unknown> };

afterAll(async () => {
  await ((await cache.waybillStore) as Store | undefined)?.close();
  dir.remove();
});

const bulk = (token: string, body: unknown) =>
  POST(
    new Request('http://waybill.internal:3000/api/v1/runs/bulk', {
      method: 'POST',
      headers: { host: 'waybill.internal:3000', authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    }),
  );

/** Every run's status and the audit log's length, read beside the server's store. */
function state() {
  const store = openSqliteStore({ path: dir.file('w.db'), synchronous: 'normal' });
  try {
    const runs = store.db.prepare('SELECT id, status FROM runs ORDER BY id').all() as { id: string; status: string }[];
    const audit = (store.db.prepare('SELECT count(*) AS n FROM audit').get() as { n: number }).n;
    return { runs: runs.map((r) => `${r.id}:${r.status}`), audit };
  } finally {
    void store.close();
  }
}

describe('POST /api/v1/runs/bulk', () => {
  it("refuses a viewer and bad input without changing anything, and does the operator's bulk exactly", async () => {
    const store = openSqliteStore({ path: dir.file('w.db'), synchronous: 'normal' });
    try {
      for (let i = 0; i < 5; i++)
        await store.createRun({ id: `n-${i}`, workflow: 'notify', inputJson: '{}', totalSteps: 1 });
      await store.createRun({ id: 'other', workflow: 'agent-batch', inputJson: '{}', totalSteps: 1 });
    } finally {
      await store.close();
    }
    const before = state();
    expect(before.audit).toBe(0);

    const viewer = await bulk(VIEWER, { action: 'cancel', filter: { workflow: 'notify' } });
    expect(viewer.status).toBe(403);
    expect(await viewer.json()).toMatchObject({ error: { code: 'FORBIDDEN' } });
    expect(state()).toEqual(before);

    const cases: [unknown, Record<string, string[]>][] = [
      [{ action: 'delete', filter: {} }, { action: ['must be one of pause, resume, cancel, retry, rerun'] }],
      [{ action: 'cancel' }, { filter: ['must be an object of status, waiting, workflow and q'] }],
      [
        { action: 'cancel', filter: { status: 'zombie' } },
        {
          'filter.status': [
            'must be one of queued, running, paused, waiting, completed, failed, cancelled, rejected, idle',
          ],
        },
      ],
      [
        { action: 'cancel', filter: { workflow: 'NOTIFY' } },
        { 'filter.workflow': ['must be a workflow name (lowercase letters, digits, dashes)'] },
      ],
      [{ action: 'cancel', filter: { q: 'a\u0007b' } }, { 'filter.q': ['must not contain control characters'] }],
      [{ action: 'cancel', filter: {}, froce: true }, { froce: ['is not a known field'] }],
      [{ action: 'rerun', filter: {} }, { fromStep: ['is required for rerun: a step number or name'] }],
      [{ action: 'rerun', filter: {}, fromStep: -3 }, { fromStep: ['must be 0 or more'] }],
      [{ action: 'cancel', filter: {}, fromStep: 3 }, { fromStep: ['is only for rerun'] }],
      [{ action: 'rerun', ids: ['n-0'], filter: {}, fromStep: 0 }, { ids: ['give either filter or ids, not both'] }],
    ];
    for (const [body, fields] of cases) {
      const refused = await bulk(OPERATOR, body);
      expect(refused.status, JSON.stringify(body)).toBe(400);
      expect((await refused.json()).error.fields, JSON.stringify(body)).toEqual(fields);
    }
    const notJson = await bulk(OPERATOR, '{"action": "cancel",');
    expect([notJson.status, (await notJson.json()).error.code]).toEqual([400, 'INVALID_JSON']);
    expect(state()).toEqual(before);

    const done = await bulk(OPERATOR, {
      action: 'cancel',
      filter: { workflow: 'notify', status: 'queued' },
      reason: 'wrong outbox',
    });
    expect(done.status).toBe(200);
    expect(await done.json()).toEqual({ matched: 5, done: 5, skipped: [] });
    expect(state()).toEqual({
      runs: ['n-0:cancelled', 'n-1:cancelled', 'n-2:cancelled', 'n-3:cancelled', 'n-4:cancelled', 'other:queued'],
      audit: 5,
    });

    // Rerun from a step over a selection: the cancelled runs it applies to are queued again, the queued one skipped.
    const rerun = await bulk(OPERATOR, { action: 'rerun', ids: ['n-0', 'n-1', 'other'], fromStep: 0 });
    expect(rerun.status).toBe(200);
    expect(await rerun.json()).toEqual({
      matched: 3,
      done: 2,
      skipped: [{ id: 'other', reason: 'is queued: rerun applies to completed, failed, cancelled, paused runs' }],
    });
    expect(state()).toEqual({
      runs: ['n-0:queued', 'n-1:queued', 'n-2:cancelled', 'n-3:cancelled', 'n-4:cancelled', 'other:queued'],
      audit: 7,
    });
  });
});
