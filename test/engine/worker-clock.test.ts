/**
 * A worker whose clock runs a day ahead of the store's: a sleep and a wait's timeout are decided by the store's
 * clock (the database's on PostgreSQL), the one every lease is judged by, never by the worker's. Its own clock
 * would find a 10-minute sleep long over, and an approval's 24 h timeout with `onTimeout: 'approve'` passed,
 * skipping the person.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { Clock } from '../../lib/clock';
import { startRun } from '../../lib/engine/runs';
import { defineWorkflow, WorkflowRegistry } from '../../lib/engine/workflow';
import { servedStores } from '../support/served-stores';

const DAY_MS = 24 * 3600_000;
const after = new Map<string, number>();

const nap = defineWorkflow({
  name: 'nap',
  input: z.object({}),
  async run(ctx) {
    await ctx.sleep(10 * 60_000);
    await ctx.step('after', () => after.set(ctx.runId, (after.get(ctx.runId) ?? 0) + 1));
  },
});
const gate = defineWorkflow({
  name: 'gate',
  input: z.object({}),
  async run(ctx) {
    await ctx.waitForApproval('review', { timeoutMs: DAY_MS, onTimeout: 'approve' });
    await ctx.step('after', () => after.set(ctx.runId, (after.get(ctx.runId) ?? 0) + 1));
  },
});
const registry = new WorkflowRegistry([nap, gate]);

/** The store's clock, its wall time `ms` ahead: durations, deadlines and timers as the store's own. */
function ahead(clock: Clock, ms: number): Clock {
  return {
    now: () => clock.now() + ms,
    monotonic: () => clock.monotonic(),
    setTimeout: (fn, delay, options) => clock.setTimeout(fn, delay, options),
    clearTimeout: (handle) => clock.clearTimeout(handle),
    sleep: (delay, signal) => clock.sleep(delay, signal),
  };
}

// Above servedStores(), so that it runs once the workers have stopped: see there.
afterEach(() => {
  after.clear();
});
const stores = servedStores();

describe.each([['sqlite'], ['postgres']] as const)('a worker a day ahead of the store on %s', (name) => {
  it("leaves a 10-minute sleep waiting and a 24 h approval's timeout undecided", async (t) => {
    const h = await stores.open(name);
    if (!h) return t.skip();
    stores.serve(h, registry, { concurrency: 2, clock: ahead(h.clock, DAY_MS + 3600_000) });
    const sleeper = await startRun(h.store, registry, { workflow: 'nap', input: {} });
    const approval = await startRun(h.store, registry, { workflow: 'gate', input: {} });
    for (let i = 0; i < 500; i++) {
      const runs = await Promise.all([h.store.getRun(sleeper.id), h.store.getRun(approval.id)]);
      if (runs.every((run) => run?.status !== 'queued' && run?.status !== 'running')) break;
      await h.elapse(10);
    }
    // A minute passes on the store's clock: neither is due, and the worker looks again many times.
    await h.elapse(60_000);

    expect((await h.store.getRun(sleeper.id))?.status).toBe('waiting');
    expect((await h.store.getRun(approval.id))?.status).toBe('waiting');
    expect(await h.store.getWait(sleeper.id, 'sleep', 'sleep#1')).toMatchObject({ decidedAt: null, decidedBy: null });
    expect(await h.store.getWait(approval.id, 'approval', 'review')).toMatchObject({
      decidedAt: null,
      decidedBy: null,
    });
    const left = await h.store.waitDueInMs(sleeper.id, 'sleep', 'sleep#1');
    expect(left).toBeGreaterThan(8 * 60_000);
    expect(left).toBeLessThanOrEqual(9 * 60_000);
    expect(after.size).toBe(0);
  });
});
