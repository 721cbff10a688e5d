/**
 * GET /api/v1/runs/{id}/logs over real HTTP (the route handlers on a real port, a real SQLite file), its lines
 * written by another store connection as a worker elsewhere writes them: the newest lines by default, pages
 * after a seq with `next` and `more` for a follower; viewers and operators read it, a run token may not (it is
 * the protocol's only); every bad parameter is a 400 naming it, an unknown run a 404, and nothing is written.
 */
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openSqliteStore } from '../../lib/store/sqlite';
import { type Answer, request } from '../support/http';
import { makeTempDir } from '../support/tmp';

const OPERATOR = 'logs-operator-token-0123456789ab';
const VIEWER = 'logs-viewer-token-0123456789abcd';
const dir = makeTempDir('waybill-run-logs-');
const DB = dir.file('w.db');
process.env.DATABASE_URL = `file:${DB}`;
process.env.WAYBILL_OPERATOR_TOKEN = OPERATOR;
process.env.WAYBILL_VIEWER_TOKEN = VIEWER;
process.env.WAYBILL_SESSION_SECRET = 'logs-suite-session-secret-012345';

const { startRouteServer } = await import('../support/route-server');
const cache = globalThis as { waybillStore?: Promise<{ close(): Promise<void> }> };
let server: Awaited<ReturnType<typeof startRouteServer>>;
// The worker's connection: a store of its own on the same file.
const worker = openSqliteStore({ path: DB, synchronous: 'normal' });

beforeAll(async () => {
  server = await startRouteServer();
  await worker.createRun({ id: 'prog', workflow: 'chatty', inputJson: '{}', totalSteps: null });
  await worker.createRun({ id: 'quiet', workflow: 'chatty', inputJson: '{}', totalSteps: null });
  await worker.appendRunLogs(
    Array.from({ length: 150 }, (_, i) => ({
      runId: 'prog',
      at: 1_700_000_000 + i,
      stream: i % 10 === 9 ? ('stderr' as const) : ('stdout' as const),
      line: `line ${i + 1}`,
      workerId: 'w1',
      attempt: 1,
    })),
    { keep: 2000 },
  );
});
afterAll(async () => {
  await server?.close();
  await (await cache.waybillStore?.catch(() => undefined))?.close();
  await worker.close();
  dir.remove();
});

const get = (path: string, token: string | null = VIEWER): Promise<Answer> => request(server.url, 'GET', path, token);
const seqs = (answer: Answer) => (answer.body.lines as { seq: number }[]).map((l) => l.seq);
const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);

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

describe('GET /api/v1/runs/{id}/logs', () => {
  it('answers the newest lines by default, and pages after a seq with next and more', async () => {
    const tail = await get('/api/v1/runs/prog/logs');
    expect(tail.status).toBe(200);
    expect(seqs(tail)).toEqual(range(51, 150));
    expect(tail.body).toMatchObject({ runId: 'prog', next: 150, more: false });
    expect(tail.body.lines[0]).toEqual({
      seq: 51,
      at: 1_700_000_050,
      stream: 'stdout',
      line: 'line 51',
      workerId: 'w1',
      attempt: 1,
    });
    expect(tail.body.lines.filter((l: { stream: string }) => l.stream === 'stderr')).toHaveLength(10);

    const first = await get('/api/v1/runs/prog/logs?after=0&limit=60');
    expect(seqs(first)).toEqual(range(1, 60));
    expect(first.body).toMatchObject({ next: 60, more: true });
    const second = await get(`/api/v1/runs/prog/logs?after=${first.body.next}&limit=1000`);
    expect(seqs(second)).toEqual(range(61, 150));
    expect(second.body).toMatchObject({ next: 150, more: false });
    // A follower that has everything: no lines, the same next.
    const none = await get('/api/v1/runs/prog/logs?after=150');
    expect([none.status, none.body]).toEqual([200, { runId: 'prog', lines: [], next: 150, more: false }]);
    // A line the worker writes now is the follower's next page.
    await worker.appendRunLogs([{ runId: 'prog', at: 1, stream: 'worker', line: 'program exited with 0' }], {
      keep: 2000,
    });
    const latest = await get('/api/v1/runs/prog/logs?after=150');
    expect(latest.body.lines.map((l: { line: string }) => l.line)).toEqual(['program exited with 0']);
    expect(latest.body.next).toBe(151);
    // A run that printed nothing is an empty log, not a 404.
    expect((await get('/api/v1/runs/quiet/logs')).body).toEqual({ runId: 'quiet', lines: [], next: 0, more: false });
  });

  it('is for viewers and operators: no token is 401, a run token (even its own run’s) is 403', async () => {
    expect((await get('/api/v1/runs/prog/logs?limit=1', OPERATOR)).status).toBe(200);
    expect((await get('/api/v1/runs/prog/logs?limit=1', null)).status).toBe(401);
    const minted = await request(server.url, 'POST', '/api/v1/runs/prog/tokens', OPERATOR, {});
    expect(minted.status).toBe(201);
    const own = await get('/api/v1/runs/prog/logs', minted.body.token);
    expect([own.status, own.body.error.code]).toEqual([403, 'FORBIDDEN']);
    expect(own.body.error.message).toBe(
      'a run token (for run prog) may use only the checkpoint protocol of its own run',
    );
  });

  it('refuses every bad parameter with a 400 naming it, an unknown run with a 404, and writes nothing', async () => {
    const before = snapshot();
    const cases: [string, Record<string, string[]>][] = [
      ['after=-1', { after: ['must be a whole number, 0 or more: the seq of the last line you have'] }],
      ['after=1.5', { after: ['must be a whole number, 0 or more: the seq of the last line you have'] }],
      ['after=1e3', { after: ['must be a whole number, 0 or more: the seq of the last line you have'] }],
      ['after=', { after: ['must be a whole number, 0 or more: the seq of the last line you have'] }],
      ['limit=0', { limit: ['must be a whole number from 1 to 1000'] }],
      ['limit=1001', { limit: ['must be at most 1000'] }],
      ['limit=ten', { limit: ['must be a whole number from 1 to 1000'] }],
      ['since=5', { since: ['is not a known field'] }],
      ['after=1&after=2', { after: ['given more than once'] }],
    ];
    for (const [q, fields] of cases) {
      const answer = await get(`/api/v1/runs/prog/logs?${q}`);
      expect([q, answer.status, answer.body.error.code, answer.body.error.fields]).toEqual([
        q,
        400,
        'INVALID_INPUT',
        fields,
      ]);
    }
    const missing = await get('/api/v1/runs/nope/logs');
    expect([missing.status, missing.body.error.code, missing.body.error.message]).toEqual([
      404,
      'NOT_FOUND',
      'run nope not found',
    ]);
    expect(snapshot()).toBe(before);
  });
});
