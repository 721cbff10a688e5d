/**
 * The CLI's --json and the HTTP API answer in the same views (lib/control/views): a run, the runs listing and
 * the claims listing read by `waybill` (a real process) and by the route handlers over one SQLite file are
 * equal field for field — `input` and `key`, never `inputJson` and `idemKey` — and each listing in the same
 * envelope (`{ runs, nextCursor }`, `{ claims, nextCursor }`, `{ entries, next }`, `{ lines, … }`).
 */
import { afterAll, describe, expect, it } from 'vitest';
import { json, runCli } from '../cli/support';
import { makeTempDir } from '../support/tmp';

const dir = makeTempDir('waybill-views-');
const url = `file:${dir.file('w.db')}`;
process.env.DATABASE_URL = url;
const { getStore } = await import('../../lib/data/store');
const store = await getStore();

afterAll(async () => {
  await store.close();
  dir.remove();
});

const get = async (
  path: string,
  route: { GET: (r: Request, c: never) => Promise<Response> },
  params?: Record<string, string>,
) => {
  const response = await route.GET(
    new Request(`http://127.0.0.1:3000${path}`, { headers: { host: '127.0.0.1:3000' } }),
    { params: Promise.resolve(params ?? {}) } as never,
  );
  expect(response.status).toBe(200);
  return response.json();
};

describe('waybill --json and the API', () => {
  it('answer a run, the runs and the claims in the same fields', async () => {
    expect((await runCli(['--db', url, 'start', 'agent-batch', '--input', '{"count":2}', '--id', 'v1'])).code).toBe(0);
    await store.claim({
      idemKey: 'v1:step:0',
      runId: 'v1',
      token: 't',
      workerId: 'w1',
      step: 0,
      attempt: 1,
      leaseMs: 60_000,
      claimTtlMs: 30_000,
    });

    const started = json(
      await runCli(['--db', url, 'start', 'agent-batch', '--input', '{"count":3}', '--id', 'v2', '--json']),
    );
    const run = (await get('/api/v1/runs/v2', await import('../../app/api/v1/runs/[id]/route'), { id: 'v2' })).run;
    expect(started).toEqual(run);
    expect(started).toMatchObject({ input: { count: 3 }, external: false });
    expect(started).not.toHaveProperty('inputJson');

    const inspected = json(await runCli(['--db', url, 'inspect', 'v1', '--json']));
    const detail = await get('/api/v1/runs/v1', await import('../../app/api/v1/runs/[id]/route'), { id: 'v1' });
    expect(inspected.run).toEqual(detail.run);
    expect(inspected.claims).toEqual(detail.claims);
    expect(inspected.claims.map((c: { key: string }) => c.key)).toEqual(['v1:step:0']);
    expect(inspected.events.map((e: { key: string | null; outcome: string }) => [e.key, e.outcome])).toEqual([
      [null, 'operator'],
    ]);

    const runs = json(await runCli(['--db', url, 'runs', '--json']));
    expect(runs).toEqual(await get('/api/v1/runs', await import('../../app/api/v1/runs/route')));
    expect(Object.keys(runs)).toEqual(['runs', 'nextCursor']);
    expect(runs.runs.map((r: { id: string }) => r.id)).toEqual(['v2', 'v1']);
    // A page and its cursor: the next page is the same on both sides too.
    const first = json(await runCli(['--db', url, 'runs', '--json', '--limit', '1']));
    expect(first).toEqual(await get('/api/v1/runs?limit=1', await import('../../app/api/v1/runs/route')));
    expect(first.nextCursor).toEqual(expect.any(String));
    const second = json(await runCli(['--db', url, 'runs', '--json', '--limit', '1', '--cursor', first.nextCursor]));
    expect(second.runs.map((r: { id: string }) => r.id)).toEqual(['v1']);

    const claims = json(await runCli(['--db', url, 'claims', '--json']));
    expect(claims).toEqual(await get('/api/v1/claims', await import('../../app/api/v1/claims/route')));
    expect(Object.keys(claims)).toEqual(['claims', 'nextCursor']);
    expect(claims.claims).toHaveLength(1);

    const audit = json(await runCli(['--db', url, 'audit', '--json']));
    expect(audit).toEqual(await get('/api/v1/audit', await import('../../app/api/v1/audit/route')));
    expect(Object.keys(audit)).toEqual(['entries', 'next']);

    const logs = json(await runCli(['--db', url, 'logs', 'v1', '--json']));
    expect(logs).toEqual(
      await get('/api/v1/runs/v1/logs', await import('../../app/api/v1/runs/[id]/logs/route'), { id: 'v1' }),
    );
  });
});
