/**
 * Overlap `queue` under a real Worker on every backend: a schedule every second whose runs go for several ticks
 * (each waits for a signal the test sends three seconds on). The worker fires all along, on the store's clock.
 * At every firing at most one of the schedule's runs goes, and each run's end fires exactly one run, created after
 * that end. test/contract/schedule-queue.test.ts has which ticks fire, tick by tick.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { waits } from '../../lib/control';
import type { Caller } from '../../lib/control/caller';
import { Worker } from '../../lib/engine/worker';
import { defineWorkflow, WorkflowRegistry } from '../../lib/engine/workflow';
import type { Store } from '../../lib/store/contract';
import { GOING_STATUSES } from '../../lib/store/shared/schedules';
import { backends, type StoreHandle, untilRun } from '../support/backends';

const list = await backends();
const ROUNDS = 4;

const serial = defineWorkflow({
  name: 'serial',
  input: z.object({}),
  async run(ctx) {
    await ctx.waitForSignal('done');
  },
});
const registry = new WorkflowRegistry([serial]);
const alice: Caller = { actor: 'alice (operator)', role: 'operator', channel: 'api' };

describe.each(list)('overlap queue under a worker on $name', (backend) => {
  let h: StoreHandle;
  let worker: Worker | null = null;
  let running: Promise<void> = Promise.resolve();
  afterEach(async () => {
    worker?.stop();
    await h.settle(running);
    await h.close();
    worker = null;
  });

  it('never has two runs going; each end fires one run', async () => {
    h = await backend.open();
    const store: Store = h.store;
    // Through the store, not the test's one admin connection: the firings count while the test polls.
    const runsOf = async () => {
      const listed = await store.listRuns({ search: 'every-second:', limit: 100, claimTtlMs: 30_000 });
      const rows = await Promise.all(listed.map((r) => store.getRun(r.id)));
      return rows.map((r) => r!).sort((a, b) => a.createdAt - b.createdAt || a.id.localeCompare(b.id));
    };
    const going = async () => (await runsOf()).filter((r) => GOING_STATUSES.includes(r.status));
    // Counted at every firing, when the worker's firing has committed.
    const goingAtFiring: number[] = [];
    const fire = store.fireDueSchedules.bind(store);
    store.fireDueSchedules = async (plan, options) => {
      const outcome = await fire(plan, options);
      goingAtFiring.push((await going()).length);
      return outcome;
    };
    await store.createSchedule({
      name: 'every-second',
      workflow: 'serial',
      cron: '* * * * * *',
      timeZone: 'UTC',
      inputJson: '{}',
      overlap: 'queue',
      catchUp: 'latest',
      catchUpCap: 10,
      source: 'operator',
      nextFireAt: Math.ceil(await h.now()),
    });
    worker = new Worker({ store, registry, pollMs: 10, heartbeatMs: 50, scheduleMs: 1000, clock: h.clock });
    running = worker.run();

    const ended: string[] = [];
    for (let round = 0; round <= ROUNDS; round++) {
      // The worker fires at its next look, and the run it made parks on its signal.
      let current: string | undefined;
      for (let i = 0; i < 3000 && !current; i++) {
        const now = await going();
        expect(now.map((r) => r.id).slice(1), `round ${round}: runs going beside ${now[0]?.id}`).toEqual([]);
        if (now.length === 1 && now[0]!.status === 'waiting' && !ended.includes(now[0]!.id)) current = now[0]!.id;
        else await h.elapse(10);
      }
      expect(current, `round ${round}: a run waiting`).toBeDefined();
      if (round === ROUNDS) break;
      // Three ticks come while it goes.
      for (let s = 0; s < 3; s++) await h.elapse(1000);
      await waits.signal({ store: async () => store, claimTtlMs: 30_000, maxBytes: 1_000_000 }, alice, {
        runId: current!,
        name: 'done',
        payload: null,
      });
      await untilRun(h, current!, 'completed');
      ended.push(current!);
    }

    worker.stop();
    await h.settle(running);
    worker = null;
    const runs = await runsOf();
    // Each end fired exactly one run, and after it: never two going at once.
    expect(runs.map((r) => r.status)).toEqual([...Array(ROUNDS).fill('completed'), 'waiting']);
    expect(runs.slice(0, ROUNDS).map((r) => r.id)).toEqual(ended);
    for (let i = 1; i < runs.length; i++) expect(runs[i]!.createdAt).toBeGreaterThanOrEqual(runs[i - 1]!.finishedAt!);
    // At least the firings that made the runs were counted.
    expect(goingAtFiring.length).toBeGreaterThanOrEqual(runs.length);
    expect(Math.max(...goingAtFiring)).toBe(1);
  });
});
