/**
 * The new routes and commands on a real SQLite file, through their real handlers and the real CLI: every bad
 * input is refused naming the field (400, or exit 2), with the store unchanged, and a good request answers in
 * the API's view.
 */
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import type { SqliteStore } from '../../lib/store/sqlite';
import { runCli } from '../cli/support';
import { makeTempDir } from '../support/tmp';

const dir = makeTempDir('waybill-rewind-routes-');
process.env.DATABASE_URL = `file:${dir.file('w.db')}`;
const rerunRoute = await import('../../app/api/v1/runs/[id]/rerun/route');
const forkRoute = await import('../../app/api/v1/runs/[id]/fork/route');
const stepRoute = await import('../../app/api/v1/runs/[id]/steps/[n]/route');
const { getStore } = await import('../../lib/data/store');
const store = (await getStore()) as unknown as SqliteStore & Awaited<ReturnType<typeof getStore>>;

afterAll(async () => {
  await store.close();
  dir.remove();
});

beforeEach(() => {
  store.db.exec(
    'DELETE FROM runs; DELETE FROM progress; DELETE FROM committed; DELETE FROM committed_history; DELETE FROM step_events; DELETE FROM audit',
  );
  const now = Date.now() / 1000;
  store.db
    .prepare(`INSERT INTO runs (id, workflow, input_json, status, total_steps, attempts, created_at, updated_at)
    VALUES ('r1', 'notify', '{"count":3,"outbox":"o.jsonl","latencyMs":0}', 'completed', 3, 1, ?, ?)`)
    .run(now, now);
  for (let n = 0; n < 3; n++) {
    store.db
      .prepare(
        `INSERT INTO committed (idem_key, run_id, result_json, committed_at, step, source) VALUES (?, 'r1', ?, ?, ?, 'executed')`,
      )
      .run(`r1:step:${n}`, JSON.stringify({ n }), now, n);
  }
});

const headers = { host: '127.0.0.1:3000', 'content-type': 'application/json' };
const post = (
  route: { POST: (r: Request, c: { params: Promise<{ id: string }> }) => Promise<Response> },
  id: string,
  body: unknown,
) =>
  route.POST(
    new Request(`http://127.0.0.1:3000/api/v1/runs/${id}/x`, { method: 'POST', headers, body: JSON.stringify(body) }),
    { params: Promise.resolve({ id }) },
  );
const get = (id: string, n: string) =>
  stepRoute.GET(new Request(`http://127.0.0.1:3000/api/v1/runs/${id}/steps/${n}`, { headers }), {
    params: Promise.resolve({ id, n }),
  });
const dump = () =>
  JSON.stringify(
    ['runs', 'progress', 'committed', 'committed_history', 'step_events', 'audit'].map((t) =>
      store.db.prepare(`SELECT * FROM ${t} ORDER BY rowid`).all(),
    ),
  );

describe('POST rerun and fork, GET a step', () => {
  it('refuses each bad body or path naming the field, and writes nothing', async () => {
    const before = dump();
    const cases: [Promise<Response>, number, string][] = [
      [post(rerunRoute, 'r1', {}), 400, 'fromStep'],
      [post(rerunRoute, 'r1', { fromStep: 'two' }), 400, 'run r1 has no step of that name'],
      [post(rerunRoute, 'r1', { fromStep: '1.5' }), 400, 'must be a whole number'],
      [post(rerunRoute, 'r1', { fromStep: true }), 400, 'fromStep'],
      [post(rerunRoute, 'r1', { fromStep: 1, extra: true }), 400, 'extra'],
      [post(rerunRoute, 'r1', { fromStep: 1, reason: 7 }), 400, 'reason'],
      [post(rerunRoute, 'r1', { fromStep: 1, input: { count: 'x' } }), 400, 'input.count'],
      [post(rerunRoute, 'r1', { fromStep: 3 }), 400, 'fromStep 3 is beyond'],
      [post(forkRoute, 'r1', { fromStep: 1, id: 'bad id' }), 400, 'id'],
      [post(forkRoute, 'r1', { fromStep: -1 }), 400, 'fromStep'],
      [post(forkRoute, 'nobody', { fromStep: 0 }), 409, 'outside client'],
      [get('r1', 'x'), 400, '"n"'],
      [get('r1', '99'), 404, 'step 99 of run r1 not found'],
    ];
    for (const [answer, status, mention] of cases) {
      const response = await answer;
      const text = await response.text();
      expect([response.status, text]).toEqual([status, expect.stringContaining(mention)]);
    }
    expect(dump()).toBe(before);
  });

  it('answers a rerun, a fork and a step in the API views', async () => {
    const rerun = await post(rerunRoute, 'r1', { fromStep: 2, reason: 'wrong' });
    expect(rerun.status).toBe(200);
    expect(await rerun.json()).toMatchObject({ moved: 1, rerun: 1, run: { id: 'r1', status: 'queued' } });
    const step = await (await get('r1', '2')).json();
    expect(step).toMatchObject({
      key: 'r1:step:2',
      status: 'not_committed',
      history: [{ result: { n: 2 }, supersededBy: expect.any(String), reason: 'wrong', rerun: 1 }],
    });
    const fork = await post(forkRoute, 'r1', { fromStep: 1, id: 'r1-b' });
    expect(fork.status).toBe(201);
    expect(await fork.json()).toMatchObject({ copied: 1, run: { id: 'r1-b', forkedFromRun: 'r1', forkedAtStep: 1 } });
  });

  it('the CLI refuses bad flags naming them (exit 2), with the store unchanged', async () => {
    const before = dump();
    const db = ['--db', process.env.DATABASE_URL!];
    for (const [args, mention] of [
      [['rerun', 'r1'], '--from-step: must be a step number'],
      [['rerun', 'r1', '--from-step', '1.5'], '--from-step: must be a whole number, 0 or more (or a step name)'],
      [['rerun', 'r1', '--from-step', ' '], '--from-step: must be a step number or a step name'],
      [['fork', 'r1', '--from-step', 'no-such-step'], 'fromStep "no-such-step": run r1 has no step of that name'],
      [['fork', 'r1', '--from-step', '1', '--input', '{"count":'], '--input'],
      [['rerun', 'r1', '--from-step', '1', '--input', '{"count":"x"}'], 'input.count'],
      [['step', 'r1', 'two'], 'step: must be a step number'],
      [['rerun', 'r1', '--from-step', '1', '--bogus'], '--bogus'],
    ] as [string[], string][]) {
      const result = await runCli([...args, ...db]);
      expect([args.join(' '), result.code, result.stderr]).toEqual([
        args.join(' '),
        2,
        expect.stringContaining(mention),
      ]);
    }
    expect(dump()).toBe(before);
  }, 60_000);
});
