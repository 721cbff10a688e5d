/**
 * /api/v1/webhooks over real HTTP on a real SQLite file: an operator adds (the secret shown once), lists, pauses,
 * resumes and deletes a webhook, lists its deliveries and resends one, each change audited; a viewer may only
 * read; a bad URL or an unknown event is 400 naming the field, with nothing written.
 */
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Answer, request } from '../support/http';
import { serveApi } from '../support/route-server';
import { makeTempDir } from '../support/tmp';

const OPERATOR = 'hook-operator-token-0123456789abc';
const VIEWER = 'hook-viewer-token-0123456789abcde';

describe('webhooks over HTTP', () => {
  const dir = makeTempDir('waybill-api-webhooks-');
  const file = dir.file('s.db');
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
    server = await serveApi(file, {
      operator: OPERATOR,
      viewer: VIEWER,
      sessionSecret: 'webhooks-suite-session-secret-01',
    });
  });
  afterAll(async () => {
    await server?.close();
    dir.remove();
  });

  it('adds, lists, pauses, resumes, resends and deletes, each audited; a viewer may only read', async () => {
    const add = { url: 'https://hooks.example.com/waybill', events: ['run.failed', 'run.completed', 'run.failed'] };
    expect((await api('POST', '/api/v1/webhooks', VIEWER, add)).status).toBe(403);
    const added = await api('POST', '/api/v1/webhooks', OPERATOR, add);
    expect(added.status, JSON.stringify(added.body)).toBe(201);
    const { id, secret } = added.body.webhook;
    expect(added.body.webhook).toMatchObject({
      events: ['run.failed', 'run.completed'],
      paused: false,
      inDoubtSeconds: 300,
    });
    expect(secret).toMatch(/^whsec_/);
    const listed = await api('GET', '/api/v1/webhooks', VIEWER);
    expect(listed.body.webhooks).toEqual([expect.objectContaining({ id, secretHint: `…${secret.slice(-4)}` })]);
    expect(JSON.stringify(listed.body)).not.toContain(secret);

    expect(
      (await api('POST', `/api/v1/webhooks/${id}/pause`, OPERATOR, { reason: 'receiver moving' })).body.webhook,
    ).toMatchObject({ paused: true });
    expect((await api('POST', `/api/v1/webhooks/${id}/resume`, OPERATOR)).body.webhook).toMatchObject({
      paused: false,
    });
    expect((await api('POST', `/api/v1/webhooks/${id}/explode`, OPERATOR)).status).toBe(404);
    expect((await api('POST', '/api/v1/webhooks/wh_nope/pause', OPERATOR)).status).toBe(404);

    // A run failed: its delivery is listed, and can be re-sent.
    const db = new Database(file);
    db.prepare(
      `INSERT INTO webhook_deliveries (id, webhook_id, event, run_id, payload_json, status, attempts, next_attempt_at,
        last_error, created_at, updated_at) VALUES (?, ?, 'run.failed', 'r1', '{"type":"run.failed","at":1,"data":{}}',
        'failed', 10, 1, 'HTTP 503', 1, 1)`,
    ).run(`${id}:run.failed:r1:1`, id);
    db.close();
    const deliveries = await api('GET', `/api/v1/webhooks/deliveries?status=failed&webhookId=${id}`, VIEWER);
    expect(deliveries.body.deliveries).toEqual([
      expect.objectContaining({ id: `${id}:run.failed:r1:1`, status: 'failed', attempts: 10, lastError: 'HTTP 503' }),
    ]);
    expect((await api('GET', '/api/v1/webhooks/deliveries?status=lost', VIEWER)).body.error.fields).toEqual({
      status: ['must be one of pending, delivered, failed'],
    });
    const path = `/api/v1/webhooks/deliveries/${encodeURIComponent(`${id}:run.failed:r1:1`)}/resend`;
    expect((await api('POST', path, VIEWER)).status).toBe(403);
    expect((await api('POST', path, OPERATOR)).body.delivery).toMatchObject({ status: 'pending', attempts: 0 });
    expect((await api('POST', '/api/v1/webhooks/deliveries/nope/resend', OPERATOR)).status).toBe(404);

    expect((await api('DELETE', `/api/v1/webhooks/${id}`, OPERATOR)).body).toEqual({ id, deleted: true });
    expect((await api('DELETE', `/api/v1/webhooks/${id}`, OPERATOR)).status).toBe(404);
    expect(rows("SELECT action, target, detail FROM audit WHERE action LIKE 'webhook%' ORDER BY id")).toEqual([
      {
        action: 'webhook-add',
        target: id,
        detail: 'https://hooks.example.com/waybill for run.failed, run.completed',
      },
      { action: 'webhook-pause', target: id, detail: 'reason: receiver moving' },
      { action: 'webhook-resume', target: id, detail: null },
      { action: 'webhook-resend', target: `${id}:run.failed:r1:1`, detail: `run.failed to ${id}` },
      { action: 'webhook-delete', target: id, detail: null },
    ]);
  });

  it('refuses a bad URL or an unknown event naming the field, and writes nothing', async () => {
    const before = JSON.stringify([rows('SELECT * FROM webhooks'), rows('SELECT * FROM audit')]);
    const url = await api('POST', '/api/v1/webhooks', OPERATOR, { url: 'ftp://x', events: ['run.failed'] });
    expect(url.status).toBe(400);
    expect(url.body.error.fields).toEqual({ url: ['must be an http:// or https:// URL'] });
    const event = await api('POST', '/api/v1/webhooks', OPERATOR, {
      url: 'https://x.example',
      events: ['run.exploded'],
    });
    expect(event.status).toBe(400);
    expect(Object.keys(event.body.error.fields)).toEqual(['events.0']);
    const none = await api('POST', '/api/v1/webhooks', OPERATOR, { url: 'https://x.example', events: [] });
    expect(none.body.error.fields.events[0]).toMatch(/^choose at least one event/);
    const short = await api('POST', '/api/v1/webhooks', OPERATOR, {
      url: 'https://x.example',
      events: ['run.failed'],
      secret: 'short',
    });
    expect(short.body.error.fields).toEqual({ secret: ['must be at least 16 characters'] });
    expect(JSON.stringify([rows('SELECT * FROM webhooks'), rows('SELECT * FROM audit')])).toBe(before);
  });
});
