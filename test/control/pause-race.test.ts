/**
 * Many operators pausing (or resuming) one schedule, webhook or run at the same moment: one call takes effect and
 * is audited, every other is INVALID_TRANSITION (409) with no audit line. Reading the row first and writing after
 * let each call see it unpaused; the store's write must decide. On PostgreSQL the calls overlap on different pool
 * connections, so each is a transaction of its own, as they would be from different dashboard requests.
 */
import type pg from 'pg';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { type Caller, type ControlDeps, runs, schedules, webhooks } from '../../lib/control';
import { defineWorkflow, WorkflowRegistry } from '../../lib/engine/workflow';
import { InvalidTransitionError } from '../../lib/errors';
import type { Store } from '../../lib/store/contract';
import type { PostgresStore } from '../../lib/store/index';
import { backends, type StoreHandle } from '../support/backends';

const N = 8;
const list = await backends();
const OPERATOR: Caller = { actor: 'olga (operator)', role: 'operator', channel: 'api' };

const echo = defineWorkflow({ name: 'echo', input: z.strictObject({}), run: async () => null });

/** N calls at once, each answered `ok`, `409` or what else it threw: sorted, so a failure shows every outcome. */
async function race(call: () => Promise<unknown>): Promise<string[]> {
  const settled = await Promise.allSettled(Array.from({ length: N }, call));
  return settled
    .map((s) =>
      s.status === 'fulfilled' ? 'ok' : s.reason instanceof InvalidTransitionError ? '409' : String(s.reason),
    )
    .sort();
}

const ONE_WINS = [...Array<string>(N - 1).fill('409'), 'ok'];

describe.each(list)('concurrent pauses and resumes on $name', (backend) => {
  let h: StoreHandle;
  let store: Store;
  let deps: ControlDeps;
  /** The pool connections the calls went over (PostgreSQL). */
  let connections: Set<pg.PoolClient>;

  beforeEach(async () => {
    h = await backend.open();
    store = h.store;
    deps = {
      store: async () => store,
      claimTtlMs: 30_000,
      maxBytes: 1000,
      workflows: async () => new WorkflowRegistry([echo]),
    };
    connections = new Set();
    if (backend.name === 'postgres') {
      const { pool } = store as PostgresStore;
      // Connected before the race: else the first call can finish on the one open connection while the
      // others still connect, and the calls never overlap.
      await Promise.all(Array.from({ length: N }, () => pool.query('SELECT 1')));
      pool.on('acquire', (c) => connections.add(c));
    }
  });
  afterEach(() => h.close());

  const audited = async (action: string) => (await store.listAudit({ action })).length;
  const overlapped = () => {
    if (backend.name === 'postgres') expect(connections.size).toBeGreaterThan(1);
  };

  it(`lets one of ${N} concurrent pauses of a schedule, and one of ${N} resumes, take effect`, async () => {
    await schedules.add(deps, OPERATOR, { name: 'hourly', workflow: 'echo', cron: '0 0 * * * *' });
    expect(await race(() => schedules.setPaused(deps, OPERATOR, true, { name: 'hourly' }))).toEqual(ONE_WINS);
    expect(await audited('schedule-pause')).toBe(1);
    expect(await race(() => schedules.setPaused(deps, OPERATOR, false, { name: 'hourly' }))).toEqual(ONE_WINS);
    expect(await audited('schedule-resume')).toBe(1);
    expect(await store.getSchedule('hourly')).toMatchObject({ paused: false });
    overlapped();
  });

  it(`lets one of ${N} concurrent pauses of a webhook, and one of ${N} resumes, take effect`, async () => {
    const { id } = await webhooks.add(deps, OPERATOR, { url: 'https://example.com/hook', events: ['run.failed'] });
    expect(await race(() => webhooks.setPaused(deps, OPERATOR, true, { id }))).toEqual(ONE_WINS);
    expect(await audited('webhook-pause')).toBe(1);
    expect(await race(() => webhooks.setPaused(deps, OPERATOR, false, { id }))).toEqual(ONE_WINS);
    expect(await audited('webhook-resume')).toBe(1);
    expect(await store.getWebhook(id)).toMatchObject({ paused: false });
    overlapped();
  });

  it(`lets one of ${N} concurrent pauses of a run, and one of ${N} resumes, take effect`, async () => {
    await store.createRun({ id: 'r1', workflow: 'echo', inputJson: '{}', totalSteps: null });
    expect(await race(() => runs.act(deps, OPERATOR, { runId: 'r1', action: 'pause' }))).toEqual(ONE_WINS);
    expect(await audited('pause')).toBe(1);
    expect(await race(() => runs.act(deps, OPERATOR, { runId: 'r1', action: 'resume' }))).toEqual(ONE_WINS);
    expect(await audited('resume')).toBe(1);
    overlapped();
  });
});
