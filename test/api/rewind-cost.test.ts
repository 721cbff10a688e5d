/**
 * GET /api/v1/runs/{id}/rewind-cost and the rerun and fork answers' lastCost, through the real handlers on a
 * real SQLite file with tokens configured: the preview is a viewer's read that writes nothing, a bad `from`
 * is 400 naming it, a step beyond the last is the rewind's own 409; and a rerun or fork answers the figure the
 * preview gave.
 */
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import type { SqliteStore } from '../../lib/store/sqlite';
import { makeTempDir } from '../support/tmp';

const dir = makeTempDir('waybill-rewind-cost-');
const VIEWER = 'viewer-token-for-rewind-cost-0123';
const OPERATOR = 'operator-token-for-rewind-cost-0123';
process.env.DATABASE_URL = `file:${dir.file('w.db')}`;
process.env.WAYBILL_VIEWER_TOKEN = VIEWER;
process.env.WAYBILL_OPERATOR_TOKEN = OPERATOR;
const costRoute = await import('../../app/api/v1/runs/[id]/rewind-cost/route');
const rerunRoute = await import('../../app/api/v1/runs/[id]/rerun/route');
const forkRoute = await import('../../app/api/v1/runs/[id]/fork/route');
const { getStore } = await import('../../lib/data/store');
const store = (await getStore()) as unknown as SqliteStore & Awaited<ReturnType<typeof getStore>>;

afterAll(async () => {
  await store.close();
  dir.remove();
});

beforeEach(() => {
  store.db.exec(
    'DELETE FROM runs; DELETE FROM progress; DELETE FROM committed; DELETE FROM committed_history; DELETE FROM step_events; DELETE FROM audit; DELETE FROM model_calls',
  );
  const now = Date.now() / 1000;
  store.db
    .prepare(`INSERT INTO runs (id, workflow, input_json, status, total_steps, attempts, created_at, updated_at)
    VALUES ('r1', 'w', '{}', 'completed', 3, 1, ?, ?)`)
    .run(now, now);
  const cost = [0.1, 0.3, 0.12];
  for (let n = 0; n < 3; n++) {
    store.db
      .prepare(
        `INSERT INTO committed (idem_key, run_id, result_json, committed_at, step, source) VALUES (?, 'r1', '{}', ?, ?, 'executed')`,
      )
      .run(`r1:step:${n}`, now, n);
    store.db
      .prepare(
        `INSERT INTO model_calls (id, idem_key, sent_key, run_id, step, api, model, fingerprint, state, framing,
          input_tokens, output_tokens, cached_tokens, cost_usd, started_at, completed_at)
        VALUES (?, ?, ?, 'r1', ?, 'openai.chat', 'm', 'f', 'complete', 'json', 30000, 500, 1000, ?, ?, ?)`,
      )
      .run(`c${n}`, `r1:step:${n}`, `r1:step:${n}`, n, cost[n], now, now);
  }
});

const url = 'http://127.0.0.1:3000/api/v1/runs/r1/x';
const auth = (token: string) => ({ host: '127.0.0.1:3000', authorization: `Bearer ${token}` });
const preview = (id: string, query: string, token = VIEWER) =>
  costRoute.GET(new Request(`http://127.0.0.1:3000/api/v1/runs/${id}/rewind-cost${query}`, { headers: auth(token) }), {
    params: Promise.resolve({ id }),
  });
const post = (
  route: { POST: (r: Request, c: { params: Promise<{ id: string }> }) => Promise<Response> },
  body: unknown,
) =>
  route.POST(
    new Request(url, {
      method: 'POST',
      headers: { ...auth(OPERATOR), 'content-type': 'application/json' },
      body: JSON.stringify(body),
    }),
    { params: Promise.resolve({ id: 'r1' }) },
  );
const dump = () =>
  JSON.stringify(
    ['runs', 'progress', 'committed', 'committed_history', 'step_events', 'audit', 'model_calls'].map((t) =>
      store.db.prepare(`SELECT * FROM ${t} ORDER BY rowid`).all(),
    ),
  );

const LAST_COST = {
  fromStep: 1,
  toStep: 2,
  calls: 2,
  inputTokens: 60_000,
  outputTokens: 1_000,
  cachedTokens: 2_000,
  tokens: 61_000,
  costUsd: 0.42,
  unpriced: 0,
  text: 'steps 1–2 cost $0.42 and 61k tokens last time',
};

describe('GET /api/v1/runs/{id}/rewind-cost', () => {
  it('answers a viewer what the steps from N cost last time, by number or by step name, and writes nothing', async () => {
    const before = dump();
    const byNumber = await preview('r1', '?from=1');
    expect(byNumber.status).toBe(200);
    expect(await byNumber.json()).toEqual({ ...LAST_COST, costUsd: expect.closeTo(0.42, 10) });
    const byName = await preview('r1', '?from=step:2');
    expect(await byName.json()).toMatchObject({
      fromStep: 2,
      toStep: 2,
      calls: 1,
      text: 'step 2 cost $0.12 and 31k tokens last time',
    });
    expect(dump()).toBe(before);
  });

  it('refuses a bad from naming it, no token, and a step beyond the last, and writes nothing', async () => {
    const before = dump();
    const cases: [Promise<Response>, number, string][] = [
      [preview('r1', ''), 400, '"from"'],
      [preview('r1', '?from='), 400, '"from"'],
      [preview('r1', '?from=1.5'), 400, 'must be a whole number'],
      [preview('r1', '?from=-1'), 400, '"from"'],
      [preview('r1', '?from=1&from=2'), 400, 'from is given more than once'],
      [preview('r1', '?from=1&to=2'), 400, 'to'],
      [preview('r1', '?from=nope'), 400, 'run r1 has no step of that name'],
      [preview('r1', '?from=3'), 400, "fromStep 3 is beyond run r1's last step (2)"],
      [preview('nobody', '?from=0'), 409, 'outside client'],
      [preview('r1', '?from=1', 'wrong'), 401, 'UNAUTHENTICATED'],
    ];
    for (const [answer, status, mention] of cases) {
      const response = await answer;
      const text = await response.text();
      expect([response.status, text]).toEqual([status, expect.stringContaining(mention)]);
    }
    expect(dump()).toBe(before);
  });
});

describe('the rerun and fork answers', () => {
  it('carry lastCost, the figure the preview gave before the calls moved', async () => {
    const fork = await post(forkRoute, { fromStep: 1, id: 'r1-b' });
    expect(fork.status).toBe(201);
    expect((await fork.json()).lastCost).toEqual({ ...LAST_COST, costUsd: expect.closeTo(0.42, 10) });
    const rerun = await post(rerunRoute, { fromStep: 2 });
    expect(rerun.status).toBe(200);
    expect((await rerun.json()).lastCost).toMatchObject({ fromStep: 2, calls: 1, costUsd: 0.12 });
    expect(
      store.db.prepare(`SELECT id, idem_key, retired_at IS NOT NULL AS retired FROM model_calls ORDER BY id`).all(),
    ).toEqual([
      { id: 'c0', idem_key: 'r1:step:0', retired: 0 },
      { id: 'c1', idem_key: 'r1:step:1', retired: 0 },
      { id: 'c2', idem_key: null, retired: 1 },
    ]);
    // Retired, and still what step 2 cost last time.
    expect(await (await preview('r1', '?from=2')).json()).toMatchObject({ calls: 1, costUsd: 0.12 });
  });
});
