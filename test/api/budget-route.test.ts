/**
 * POST /api/v1/runs/:id/budget and POST /api/v1/runs' budgetUsd, the route handlers themselves on a real SQLite
 * file: a run started with a budget, raised, read back in the answer and audited; a bad budget is 400 naming
 * the field, a viewer 403, an unknown run 404, each writing nothing.
 */
import { afterAll, describe, expect, it } from 'vitest';
import type { Store } from '../../lib/store/contract';
import { openSqliteStore } from '../../lib/store/sqlite';
import { makeTempDir } from '../support/tmp';

const dir = makeTempDir('waybill-budget-route-');
const OPERATOR = 'operator-token-for-budget-0123456';
const VIEWER = 'viewer-token-for-budget-0123456';
process.env.DATABASE_URL = `file:${dir.file('w.db')}`;
process.env.WAYBILL_VIEWER_TOKEN = VIEWER;
process.env.WAYBILL_OPERATOR_TOKEN = OPERATOR;
const { POST: start } = await import('../../app/api/v1/runs/route');
const { POST: budget } = await import('../../app/api/v1/runs/[id]/budget/route');
const cache = globalThis as { waybillStore?: Promise<unknown> };

afterAll(async () => {
  await ((await cache.waybillStore) as Store | undefined)?.close();
  dir.remove();
});

const request = (path: string, body: unknown, token = OPERATOR) =>
  new Request(`http://waybill.internal:3000${path}`, {
    method: 'POST',
    headers: { host: 'waybill.internal:3000', authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
const raise = async (id: string, body: unknown, token = OPERATOR) => {
  const response = await budget(request(`/api/v1/runs/${id}/budget`, body, token), {
    params: Promise.resolve({ id }),
  });
  return { status: response.status, body: await response.json() };
};

function audit() {
  const store = openSqliteStore({ path: dir.file('w.db'), synchronous: 'normal' });
  try {
    return store.db.prepare('SELECT action, target, detail FROM audit ORDER BY id').all();
  } finally {
    void store.close();
  }
}

describe('a run budget over the API', () => {
  it('starts a run with a budget and raises it; refuses a bad budget, a viewer and an unknown run', async () => {
    const started = await start(
      request('/api/v1/runs', { workflow: 'agent-batch', input: { count: 1 }, id: 'n1', budgetUsd: 1.25 }),
    );
    expect(started.status).toBe(201);
    expect(((await started.json()) as { run: { budgetUsd: number } }).run.budgetUsd).toBe(1.25);
    const badStart = await start(
      request('/api/v1/runs', { workflow: 'agent-batch', input: { count: 1 }, id: 'n2', budgetUsd: -1 }),
    );
    expect(badStart.status).toBe(400);
    expect(JSON.stringify(await badStart.json())).toContain('budgetUsd');

    expect(await raise('n1', { budgetUsd: 0 })).toMatchObject({
      status: 400,
      body: { error: { code: 'INVALID_INPUT', message: expect.stringContaining('budgetUsd') } },
    });
    expect((await raise('n1', { budgetUsd: 5 }, VIEWER)).status).toBe(403);
    expect((await raise('nope', { budgetUsd: 5 })).status).toBe(404);
    const raised = await raise('n1', { budgetUsd: 5, reason: 'more' });
    expect(raised.status).toBe(200);
    expect(raised.body.run).toMatchObject({ id: 'n1', budgetUsd: 5 });
    expect(audit()).toEqual([
      { action: 'start', target: 'n1', detail: 'workflow agent-batch; budget $1.25' },
      { action: 'budget', target: 'n1', detail: 'budget $1.25 → $5; reason: more' },
    ]);
  });
});
