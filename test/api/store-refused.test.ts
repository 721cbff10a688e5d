/**
 * A store this build refuses to run on (migrated by a newer Waybill: STORE_TOO_NEW) is a 503 on every API call,
 * with the refusal's own message, which says what to do: not a 500 "internal error" that sends the operator to
 * the server log. Nothing is changed in the store.
 */
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openSqliteStore } from '../../lib/store/sqlite';
import { type Answer, request } from '../support/http';
import { serveApi } from '../support/route-server';
import { makeTempDir } from '../support/tmp';

const OPERATOR = 'too-new-operator-token-0123456789';
const VIEWER = 'too-new-viewer-token-0123456789ab';

describe('a store migrated by a newer Waybill, over HTTP', () => {
  const dir = makeTempDir('waybill-api-too-new-');
  const file = dir.file('s.db');
  let server: { url: string; close(): Promise<void> };
  const api = (method: string, path: string, body?: unknown): Promise<Answer> =>
    request(server.url, method, path, OPERATOR, body);
  const ledger = () => {
    const db = new Database(file, { readonly: true });
    try {
      return db.prepare('SELECT tag FROM waybill_migrations ORDER BY tag').all();
    } finally {
      db.close();
    }
  };

  beforeAll(async () => {
    const store = openSqliteStore({ path: file });
    await store.createRun({ id: 'r1', workflow: 'agent-batch', inputJson: '{}', totalSteps: 1 });
    store.db
      .prepare(`INSERT INTO waybill_migrations (tag, hash, applied_at) VALUES ('9999_from_a_newer_waybill', 'x', 1)`)
      .run();
    await store.close();
    server = await serveApi(file, {
      operator: OPERATOR,
      viewer: VIEWER,
      sessionSecret: 'too-new-session-secret-0123456789',
    });
  });
  afterAll(async () => {
    await server?.close();
    dir.remove();
  });

  it('answers 503 STORE_TOO_NEW with what to do, on reads and writes alike, and changes nothing', async () => {
    const before = ledger();
    for (const [method, path, body] of [
      ['GET', '/api/v1/runs', undefined],
      ['GET', '/api/v1/runs/r1', undefined],
      ['POST', '/api/v1/runs/r1/cancel', {}],
    ] as const) {
      const answer = await api(method, path, body);
      expect([answer.status, answer.body.error.code], `${method} ${path}`).toEqual([503, 'STORE_TOO_NEW']);
      expect(answer.body.error.message).toMatch(/was migrated by a newer Waybill: .*Run the newer Waybill against it/);
      expect(answer.body.error.message).toContain('9999_from_a_newer_waybill');
    }
    expect(ledger()).toEqual(before);
  });
});
