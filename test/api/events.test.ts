/**
 * POST /api/v1/events over real HTTP on a real SQLite file: the first send is 201 and starts one run of the
 * workflow a worker published as subscribed; a re-send is 200 with recorded: false and writes nothing; the
 * same id with other data is 409; a viewer is 403; a missing field is 400 naming it.
 */
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openSqliteStore } from '../../lib/store/sqlite';
import { type Answer, request } from '../support/http';
import { serveApi } from '../support/route-server';
import { makeTempDir } from '../support/tmp';

const OPERATOR = 'events-operator-token-0123456789ab';
const VIEWER = 'events-viewer-token-0123456789abcd';

describe('events over HTTP', () => {
  const dir = makeTempDir('waybill-api-events-');
  const file = dir.file('e.db');
  let server: { url: string; close(): Promise<void> };
  const api = (method: string, path: string, token: string | null, body?: unknown): Promise<Answer> =>
    request(server.url, method, path, token, body);
  const rows = (sql: string) => {
    const db = new Database(file, { readonly: true });
    try {
      return db.prepare(sql).all();
    } finally {
      db.close();
    }
  };

  beforeAll(async () => {
    const store = openSqliteStore({ path: file });
    await store.registerWorker({ id: 'w1', host: 'test', pid: 1 });
    await store.publishWorkflows('w1', [
      {
        name: 'ship',
        description: null,
        inputSchemaJson: JSON.stringify({
          type: 'object',
          properties: { order: { type: 'number' } },
          required: ['order'],
        }),
        totalSteps: null,
        version: null,
        events: ['order.created'],
      },
    ]);
    await store.close();
    server = await serveApi(file, {
      operator: OPERATOR,
      viewer: VIEWER,
      sessionSecret: 'events-suite-session-secret-0123',
    });
  });
  afterAll(async () => {
    await server?.close();
    dir.remove();
  });

  it('records once: 201, then 200 with recorded: false, one run of the subscriber', async () => {
    const sent = { id: 'o-1', name: 'order.created', data: { order: 1 } };
    expect((await api('POST', '/api/v1/events', VIEWER, sent)).status).toBe(403);
    const first = await api('POST', '/api/v1/events', OPERATOR, sent);
    expect(first.status, JSON.stringify(first.body)).toBe(201);
    expect(first.body).toMatchObject({
      event: { id: 'o-1', name: 'order.created', data: { order: 1 } },
      recorded: true,
      runs: [{ workflow: 'ship', runId: 'ship:event:o-1', existed: false }],
      refused: [],
      woke: [],
    });
    for (let i = 0; i < 2; i++) {
      const again = await api('POST', '/api/v1/events', OPERATOR, sent);
      expect(again.status).toBe(200);
      expect(again.body).toMatchObject({ recorded: false, runs: [{ runId: 'ship:event:o-1', existed: true }] });
    }
    expect(rows('SELECT id, workflow, input_json FROM runs')).toEqual([
      { id: 'ship:event:o-1', workflow: 'ship', input_json: '{"order":1}' },
    ]);
    expect(rows("SELECT target, detail FROM audit WHERE action = 'emit'")).toEqual([
      { target: 'event/o-1', detail: 'order.created: started 1, woke 0' },
    ]);
  });

  it('refuses other data under a sent id (409) and a missing name (400), writing nothing', async () => {
    await api('POST', '/api/v1/events', OPERATOR, { id: 'o-2', name: 'order.created', data: { order: 2 } });
    const before = JSON.stringify([
      rows('SELECT * FROM events'),
      rows('SELECT * FROM runs'),
      rows('SELECT * FROM audit'),
    ]);
    const conflict = await api('POST', '/api/v1/events', OPERATOR, {
      id: 'o-2',
      name: 'order.created',
      data: { order: 3 },
    });
    expect(conflict.status).toBe(409);
    expect(conflict.body.error.message).toBe('event o-2 was sent before with another data; nothing was written');
    const missing = await api('POST', '/api/v1/events', OPERATOR, { id: 'o-4', data: {} });
    expect(missing.status).toBe(400);
    expect(Object.keys(missing.body.error.fields)).toEqual(['name']);
    expect(
      JSON.stringify([rows('SELECT * FROM events'), rows('SELECT * FROM runs'), rows('SELECT * FROM audit')]),
    ).toBe(before);
  });
});
