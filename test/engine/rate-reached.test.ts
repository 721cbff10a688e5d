/**
 * The rate a worker reaches under a rate limit, by the store's clock: SQLite on a ManualClock that only this test
 * moves, ten milliseconds at a time, each move's picks finished before the next. With 10 starts a second, the
 * eleventh run's place comes free a second after the first ten started, and the worker must take it within a
 * twentieth of the period (the store's next slot, or its look every twentieth: lib/engine/worker/idle.ts), so
 * the rate reached is at least 10 / 1.05 s. limits-processes.test.ts holds the cap across four worker processes,
 * where a busy machine's slow picks, not the limiter, decide how close to the limit they come.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, beforeAll, expect, it } from 'vitest';
import { z } from 'zod';
import { startRun } from '../../lib/engine/runs';
import { Worker } from '../../lib/engine/worker';
import { defineWorkflow, WorkflowRegistry } from '../../lib/engine/workflow';
import type { Store } from '../../lib/store/contract';
import { type Backend, backends, type StoreHandle } from '../support/backends';
import { until } from '../support/until';

const LIMIT = 10;
const STEP_MS = 10;

const call = defineWorkflow({
  name: 'call',
  input: z.object({}),
  rateLimit: { limit: LIMIT, period: 'second' },
  run: async (ctx) => (await ctx.step('only', () => 1)).result,
});
const registry = new WorkflowRegistry([call]);

let sqlite: Backend | undefined;
beforeAll(async () => {
  sqlite = (await backends()).find((b) => b.name === 'sqlite');
});
const cleanup: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const fn of cleanup.splice(0).reverse()) await fn();
});

it('takes a held start within a twentieth of the period of its place coming free', async () => {
  const h: StoreHandle = await sqlite!.open();
  cleanup.push(() => h.close());
  // The worker's claims, counted while in flight: the clock moves only once the last one has answered.
  let claiming = 0;
  const store: Store = {
    ...h.store,
    claimRun: async (request) => {
      claiming++;
      try {
        return await h.store.claimRun(request);
      } finally {
        claiming--;
      }
    },
  };
  const ids: string[] = [];
  for (let i = 0; i <= LIMIT; i++) ids.push((await startRun(h.store, registry, { workflow: 'call', input: {} })).id);
  const startedAt = async () => Promise.all(ids.map(async (id) => (await h.store.getRun(id))!.startedAt));

  const t0 = h.clock.now() / 1000;
  const worker = new Worker({
    store,
    registry,
    concurrency: 2 * LIMIT,
    pollMs: 600_000,
    heartbeatMs: 60_000,
    clock: h.clock,
  });
  const done = worker.run();
  cleanup.push(async () => {
    worker.stop();
    await done;
  });

  // Ten start at once, the clock standing still; one is held.
  await until('ten runs to start', async () => (await startedAt()).filter((s) => s !== null).length === LIMIT);
  await sleep(50);
  const first = await startedAt();
  expect(first.filter((s) => s === t0)).toHaveLength(LIMIT);
  const held = ids[first.indexOf(null)]!;
  expect(first.filter((s) => s === null)).toHaveLength(1);

  let moved = 0;
  while ((await h.store.getRun(held))!.startedAt === null) {
    if (moved >= 2000) throw new Error('the held run did not start within 2 s of store time');
    await h.elapse(STEP_MS);
    moved += STEP_MS;
    // A look the move fired begins its claim on a later turn: let it begin, then wait for it to answer.
    await sleep(1);
    await until('the worker to finish its claims', () => claiming === 0, { intervalMs: 1 });
  }
  const late = (await h.store.getRun(held))!.startedAt! - t0;
  expect(late).toBeGreaterThanOrEqual(1);
  expect(late).toBeLessThanOrEqual(1.05);
});
