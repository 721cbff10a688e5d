/**
 * GET /api/v1/runs?parent= and `waybill runs --parent`, the route handler and the CLI process on one real SQLite
 * file: both list a run's children, the same runs, and refuse a bad id naming `parent`.
 */
import { afterAll, describe, expect, it } from 'vitest';
import type { Store } from '../../lib/store/contract';
import { openSqliteStore } from '../../lib/store/sqlite';
import { json, runCli } from '../cli/support';
import { makeTempDir } from '../support/tmp';

const dir = makeTempDir('waybill-runs-parent-');
const VIEWER = 'viewer-token-for-parent-0123456';
process.env.DATABASE_URL = `file:${dir.file('w.db')}`;
process.env.WAYBILL_VIEWER_TOKEN = VIEWER;
const { GET: list } = await import('../../app/api/v1/runs/route');
const { GET: one } = await import('../../app/api/v1/runs/[id]/route');
const cache = globalThis as { waybillStore?: Promise<unknown> };

afterAll(async () => {
  await ((await cache.waybillStore) as Store | undefined)?.close();
  dir.remove();
});

const get = async (query: string) => {
  const response = await list(
    new Request(`http://waybill.internal:3000/api/v1/runs?${query}`, {
      headers: { host: 'waybill.internal:3000', authorization: `Bearer ${VIEWER}` },
    }),
  );
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
};
const ids = (body: Record<string, unknown>) => (body.runs as { id: string }[]).map((r) => r.id).sort();

describe('the runs list by parent', () => {
  it('answers the same children over the API and the CLI, and refuses a bad parent id', async () => {
    const seed = openSqliteStore({ path: dir.file('w.db') });
    const run = (id: string, parentRunId?: string) =>
      seed.createRun({ id, workflow: 'agent-batch', inputJson: '{}', totalSteps: 1, parentRunId });
    await run('p');
    await run('c1', 'p');
    await seed.createRun({
      id: 'c2',
      workflow: 'agent-batch',
      inputJson: '{}',
      totalSteps: 1,
      parentRunId: 'p',
      detached: true,
    });
    await run('g1', 'c1');
    await run('other');
    await seed.close();

    const api = await get('parent=p');
    expect(api.status).toBe(200);
    expect(ids(api.body)).toEqual(['c1', 'c2']);
    expect(ids((await get('parent=c1')).body)).toEqual(['g1']);
    expect(ids((await get('parent=other')).body)).toEqual([]);

    const cli = await runCli(['--db', `file:${dir.file('w.db')}`, 'runs', '--parent', 'p', '--json']);
    expect(cli.code).toBe(0);
    expect(ids(json(cli))).toEqual(ids(api.body));

    const bad = await get(`parent=${encodeURIComponent('a b')}`);
    expect(bad.status).toBe(400);
    expect(bad.body).toMatchObject({
      error: { code: 'INVALID_INPUT', fields: { parent: ['must not contain spaces or control characters'] } },
    });
    const badCli = await runCli(['--db', `file:${dir.file('w.db')}`, 'runs', '--parent', 'a b']);
    expect({ code: badCli.code, stderr: badCli.stderr }).toEqual({
      code: 2,
      stderr: 'waybill runs: --parent: must not contain spaces or control characters\n',
    });
  });

  it('shows a run’s parent in the run view and in inspect', async () => {
    const view = async (id: string) => {
      const response = await one(
        new Request(`http://waybill.internal:3000/api/v1/runs/${id}`, {
          headers: { host: 'waybill.internal:3000', authorization: `Bearer ${VIEWER}` },
        }),
        { params: Promise.resolve({ id }) },
      );
      return ((await response.json()) as { run: Record<string, unknown> }).run;
    };
    expect(await view('c2')).toMatchObject({ parentRunId: 'p', detached: true });
    expect(await view('p')).toMatchObject({ parentRunId: null, detached: false });
    const db = ['--db', `file:${dir.file('w.db')}`];
    expect(json(await runCli([...db, 'inspect', 'c2', '--json'])).run).toMatchObject({
      parentRunId: 'p',
      detached: true,
    });
    const text = (await runCli([...db, 'inspect', 'c2'])).stdout;
    expect(text.split('\n').filter((l) => l.startsWith('parent'))).toEqual([
      expect.stringMatching(/^parent\s+p \(detached\)$/),
    ]);
    expect((await runCli([...db, 'inspect', 'p'])).stdout).not.toMatch(/^parent/m);
  });
});
