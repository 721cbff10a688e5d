/**
 * Issue 27: a run keeps its place under its workflow's concurrency limit while its worker still has its step in
 * hand, whatever an operator did to the run meanwhile. Pause, cancel and pause-then-resume each stop a run after
 * its step in hand (execute.ts), so until that step ends the run still executes: with a limit of 1, the next run
 * of the key must not start beside it. A real Worker on every backend, on the store's clock, with a step that
 * waits for the test to let it end: after the action the worker polls several times and the next run stays
 * queued, held, its step never entered; once the step is let go, the next run is taken, one step at a time.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { queuedReasonOf } from '../../lib/control/queued';
import { readStallFacts } from '../../lib/control/stalled';
import { publicationsOf } from '../../lib/engine/publish';
import { startRun } from '../../lib/engine/runs';
import { Worker } from '../../lib/engine/worker';
import { defineWorkflow, WorkflowRegistry } from '../../lib/engine/workflow';
import { type Backend, backends, type StoreHandle } from '../support/backends';

const BEAT_MS = 50;

/** Each run's step, entered and let go by the test: the side effect that must not run beside another of its key. */
const steps = new Map<string, { release: () => void; released: Promise<void> }>();
const entered: string[] = [];
let inStep = 0;
let mostInStep = 0;
const stepOf = (runId: string) => {
  let step = steps.get(runId);
  if (!step) {
    let release = () => {};
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    step = { release, released };
    steps.set(runId, step);
  }
  return step;
};

const perCustomer = defineWorkflow({
  name: 'per-customer-held',
  input: z.object({ customer: z.string() }),
  concurrency: { limit: 1, key: 'customer' },
  async run(ctx) {
    await ctx.step('work', async () => {
      entered.push(ctx.runId);
      mostInStep = Math.max(mostInStep, ++inStep);
      try {
        await stepOf(ctx.runId).released;
      } finally {
        inStep--;
      }
    });
  },
});
const registry = new WorkflowRegistry([perCustomer]);

let list: Backend[];
beforeAll(async () => {
  list = await backends();
});
const cleanup: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const step of steps.values()) step.release();
  for (const fn of cleanup.splice(0).reverse()) await fn();
  steps.clear();
  entered.length = 0;
  inStep = 0;
  mostInStep = 0;
});

/**
 * Moves the store's clock half a beat at a time until `done` holds: the worker's timers fire as it moves, and a
 * few real milliseconds let its store calls answer (PostgreSQL's over the network; the clock there only jumps).
 */
async function drive(h: StoreHandle, what: string, done: () => boolean | Promise<boolean>) {
  for (let i = 0; i < 2000; i++) {
    if (await done()) return;
    await h.elapse(BEAT_MS / 2);
    await sleep(5);
  }
  throw new Error(`never: ${what}`);
}

const actions = {
  pause: [['pause']],
  cancel: [['cancel']],
  'pause then resume': [['pause'], ['resume']],
} as const;

describe.each([['sqlite'], ['postgres']] as const)('a run stopped with its step in hand on %s', (name) => {
  it.for(Object.keys(actions) as (keyof typeof actions)[])(
    '%s: keeps its place until its step ends; the next run of its key waits, held',
    { timeout: 60_000 },
    async (action, t) => {
      const backend = list.find((b) => b.name === name);
      if (!backend) return t.skip();
      const h = await backend.open();
      cleanup.push(() => h.close());
      const worker = new Worker({
        store: h.store,
        registry,
        concurrency: 4,
        pollMs: BEAT_MS,
        idlePollMs: BEAT_MS,
        heartbeatMs: BEAT_MS,
        clock: h.clock,
        // As `waybill worker` does: the limits a held run's reason reads are the published ones.
        onRegistered: (id) => h.store.publishWorkflows(id, publicationsOf(registry)),
      });
      const done = worker.run();
      cleanup.push(async () => {
        worker.stop();
        await h.settle(done);
      });

      const a = await startRun(h.store, registry, { workflow: 'per-customer-held', input: { customer: 'acme' } });
      await drive(h, "a's step entered", () => entered.includes(a.id));
      const b = await startRun(h.store, registry, { workflow: 'per-customer-held', input: { customer: 'acme' } });
      for (const [act] of actions[action]) await h.store.actOnRun(a.id, act, 'ann');

      // The worker learns of the action at its next renewal, and looks for work at every poll: several of each.
      const polled = worker.wakes.polled;
      await drive(h, 'three polls', () => worker.wakes.polled >= polled + 3);
      expect(entered).toEqual([a.id]);
      expect((await h.store.getRun(b.id))?.status).toBe('queued');
      const facts = await readStallFacts(h.store, { now: h.clock.now(), runLeaseMs: 30_000, heartbeatMs: BEAT_MS });
      expect(await queuedReasonOf(h.store, (await h.store.getRun(b.id))!, facts)).toMatchObject({
        kind: 'held',
        limit: 'concurrency',
        key: 'acme',
        message: '1 of 1 runs for key acme are running',
      });

      // a's step ends: its place frees, and b is taken (after a's own rest, when it was resumed).
      stepOf(a.id).release();
      await drive(h, "b's step entered", () => entered.includes(b.id));
      expect(entered).toEqual([a.id, b.id]);
      expect(mostInStep).toBe(1);
      stepOf(b.id).release();
      await drive(h, 'b completed', async () => (await h.store.getRun(b.id))?.status === 'completed');
      // A paused run's step was its last: its worker completes it, as a pause lets the step in hand do.
      const ended = { pause: 'completed', cancel: 'cancelled', 'pause then resume': 'completed' }[action];
      await drive(h, `a ${ended}`, async () => (await h.store.getRun(a.id))?.status === ended);
      expect((await h.store.listCommitted(a.id)).length).toBe(1);
    },
  );
});
