/**
 * /api/v1/schedules over real HTTP on a real SQLite file: an operator adds, lists, pauses, resumes and deletes
 * a schedule, each audited; a viewer is refused; a bad cron expression or time zone is 400 naming the field,
 * with nothing written.
 */
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Answer, request } from '../support/http';
import { serveApi } from '../support/route-server';
import { makeTempDir } from '../support/tmp';

const OPERATOR = 'sched-operator-token-0123456789ab';
const VIEWER = 'sched-viewer-token-0123456789abcd';

describe('schedules over HTTP', () => {
  const dir = makeTempDir('waybill-api-schedules-');
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
      sessionSecret: 'schedules-suite-session-secret-01',
    });
  });
  afterAll(async () => {
    await server?.close();
    dir.remove();
  });

  it('adds, lists, pauses, resumes and deletes, each audited; a viewer may only list', async () => {
    const add = { name: 'hourly', workflow: 'agent-batch', cron: '0 0 * * * *', input: { count: 2 } };
    expect((await api('POST', '/api/v1/schedules', VIEWER, add)).status).toBe(403);
    const added = await api('POST', '/api/v1/schedules', OPERATOR, add);
    expect(added.status, JSON.stringify(added.body)).toBe(201);
    expect(added.body.schedule).toMatchObject({ name: 'hourly', timeZone: 'UTC', overlap: 'skip', paused: false });
    expect(added.body.schedule.nextFireAt % 3600).toBe(0);
    expect((await api('POST', '/api/v1/schedules', OPERATOR, add)).status).toBe(409);

    const listed = await api('GET', '/api/v1/schedules', VIEWER);
    expect(listed.body.schedules.map((s: { name: string }) => s.name)).toEqual(['hourly']);

    const paused = await api('POST', '/api/v1/schedules/hourly/pause', OPERATOR, { reason: 'maintenance' });
    expect(paused.body.schedule).toMatchObject({ paused: true, nextFireAt: null });
    const resumed = await api('POST', '/api/v1/schedules/hourly/resume', OPERATOR);
    expect(resumed.body.schedule?.paused, JSON.stringify(resumed.body)).toBe(false);
    expect((await api('POST', '/api/v1/schedules/hourly/explode', OPERATOR)).status).toBe(404);
    expect((await api('DELETE', '/api/v1/schedules/hourly', OPERATOR)).body).toEqual({ name: 'hourly', deleted: true });
    expect((await api('DELETE', '/api/v1/schedules/hourly', OPERATOR)).status).toBe(404);
    expect(rows("SELECT action, target, detail FROM audit WHERE action LIKE 'schedule%' ORDER BY id")).toEqual([
      { action: 'schedule-add', target: 'hourly', detail: 'workflow agent-batch, cron 0 0 * * * * (UTC)' },
      { action: 'schedule-pause', target: 'hourly', detail: 'reason: maintenance' },
      { action: 'schedule-resume', target: 'hourly', detail: null },
      { action: 'schedule-delete', target: 'hourly', detail: null },
    ]);
  });

  it('refuses a bad cron or time zone naming the field, and writes nothing', async () => {
    const before = JSON.stringify([rows('SELECT * FROM schedules'), rows('SELECT * FROM audit')]);
    const bad = await api('POST', '/api/v1/schedules', OPERATOR, {
      name: 'x',
      workflow: 'agent-batch',
      cron: 'sometimes',
    });
    expect(bad.status).toBe(400);
    expect(bad.body.error.fields).toEqual({ cron: [expect.stringMatching(/^must have five fields .*; this has 1$/)] });
    const zone = await api('POST', '/api/v1/schedules', OPERATOR, {
      name: 'x',
      workflow: 'agent-batch',
      cron: '* * * * *',
      timeZone: 'Mars/Base',
    });
    expect(zone.body.error.fields).toEqual({
      timeZone: ['unknown time zone "Mars/Base" (an IANA name, e.g. Europe/Berlin or UTC)'],
    });
    expect(JSON.stringify([rows('SELECT * FROM schedules'), rows('SELECT * FROM audit')])).toBe(before);
  });

  it('refuses a seven-field cron, and a cap with a policy other than all, as the CLI does', async () => {
    const before = JSON.stringify([rows('SELECT * FROM schedules'), rows('SELECT * FROM audit')]);
    const add = (body: object) =>
      api('POST', '/api/v1/schedules', OPERATOR, {
        name: 'x',
        workflow: 'agent-batch',
        cron: '* * * * *',
        input: { count: 2 },
        ...body,
      });
    const refused = async (body: object) => {
      const answer = await add(body);
      expect(answer.status, JSON.stringify(body)).toBe(400);
      return answer.body.error.fields;
    };
    expect(await refused({ cron: '* * * * * * *' })).toEqual({
      cron: ['must have five fields (minute hour day month weekday), or six with seconds first; this has 7'],
    });
    expect(await refused({ cron: '0 0 0 1 1 * 2030' })).toEqual({
      cron: ['must have five fields (minute hour day month weekday), or six with seconds first; this has 7'],
    });
    const capOnlyWithAll = { catchUpCap: ['only with catch-up all (latest fires one missed tick, none fires none)'] };
    expect(await refused({ catchUp: 'latest', catchUpCap: 7 })).toEqual(capOnlyWithAll);
    expect(await refused({ catchUp: 'none', catchUpCap: 7 })).toEqual(capOnlyWithAll);
    expect(await refused({ catchUpCap: 7 })).toEqual(capOnlyWithAll);
    expect(await refused({ catchUp: 'all', catchUpCap: 2.5 })).toEqual({ catchUpCap: ['must be a whole number'] });
    // Said once: the cap's own check, not again by the checks of the fields together.
    expect(await refused({ catchUp: 'all', catchUpCap: 5000 })).toEqual({ catchUpCap: ['must be at most 1000'] });
    expect(JSON.stringify([rows('SELECT * FROM schedules'), rows('SELECT * FROM audit')])).toBe(before);

    const capped = await add({ name: 'capped', catchUp: 'all', catchUpCap: 7 });
    expect(capped.status, JSON.stringify(capped.body)).toBe(201);
    expect(capped.body.schedule).toMatchObject({ catchUp: 'all', catchUpCap: 7 });
    const plain = await add({ name: 'plain' });
    expect(plain.body.schedule).toMatchObject({ catchUp: 'latest', catchUpCap: null });
    // A schedule's view, its own fields given back under another name, adds the same schedule.
    const fields = ['workflow', 'cron', 'timeZone', 'input', 'overlap', 'catchUp', 'catchUpCap'] as const;
    const copied = [];
    for (const name of ['capped', 'plain']) {
      const view = capped.body.schedule.name === name ? capped.body.schedule : plain.body.schedule;
      const copy = await add({ ...Object.fromEntries(fields.map((f) => [f, view[f]])), name: `${name}-copy` });
      expect(copy.status, JSON.stringify(copy.body)).toBe(201);
      expect(copy.body.schedule).toMatchObject(Object.fromEntries(fields.map((f) => [f, view[f]])));
      copied.push(`${name}-copy`);
    }
    for (const name of ['capped', 'plain', ...copied])
      expect((await api('DELETE', `/api/v1/schedules/${name}`, OPERATOR)).status).toBe(200);
  });
});
