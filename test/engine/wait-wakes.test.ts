/**
 * Waking a parked run without the fallback poll, in process, on both backends: every worker here polls once
 * every 5 to 15 minutes (pollMs 10 min, jittered), so a run it takes within seconds was woken — by a decision
 * made in this process (the store's local wake, announced after commit), by the first due wait it slept
 * until, or by a slot coming free. On SQLite the store and the worker run on a ManualClock that only the test
 * moves: a run that completes while it stands still was woken, not polled. What needs a wake from another
 * process (a decision through the CLI, the API in another process) is in wakes-processes.test.ts.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { waits } from '../../lib/control';
import type { Caller } from '../../lib/control/caller';
import { startRun } from '../../lib/engine/runs';
import { defineWorkflow, WorkflowRegistry } from '../../lib/engine/workflow';
import type { RunStatus, Store } from '../../lib/store/contract';
import { servedStores } from '../support/served-stores';

const POLL_MS = 600_000;
/** Real time a woken run is given to finish: far below the 5 minutes the shortest poll would take. */
const PROMPT_MS = 10_000;

const effects = new Map<string, number>();
const bump = (key: string) => effects.set(key, (effects.get(key) ?? 0) + 1);

const gate = defineWorkflow({
  name: 'gate',
  input: z.object({}),
  async run(ctx) {
    const review = await ctx.waitForApproval('review');
    await ctx.step('after', () => bump(`${ctx.runId}:after`));
    return review.approved;
  },
});
const listen = defineWorkflow({
  name: 'listen',
  input: z.object({}),
  async run(ctx) {
    const got = await ctx.waitForSignal('go');
    await ctx.step('after', () => bump(`${ctx.runId}:after`));
    return got;
  },
});
const nap = defineWorkflow({
  name: 'nap',
  input: z.object({}),
  async run(ctx) {
    await ctx.sleep(60_000);
    await ctx.step('after', () => bump(`${ctx.runId}:after`));
    return 'woke';
  },
});
const quick = defineWorkflow({
  name: 'quick',
  input: z.object({}),
  run: async (ctx) => (await ctx.step('only', () => bump(`${ctx.runId}:only`))).result,
});
const registry = new WorkflowRegistry([gate, listen, nap, quick]);

const alice: Caller = { actor: 'alice (operator)', role: 'operator', channel: 'api' };

// Above servedStores(), so that it runs once the workers have stopped: see there.
afterEach(() => {
  effects.clear();
});
const stores = servedStores();

describe.each([['sqlite'], ['postgres']] as const)('waking parked runs on %s', (name) => {
  async function setup() {
    const h = await stores.open(name);
    if (!h) return null;
    const deps = { store: async () => h.store, claimTtlMs: 30_000, maxBytes: 1_000_000 };
    const worker = (store: Store = h.store, pollMs = POLL_MS) =>
      stores.serve(h, registry, { store, concurrency: 1, pollMs, heartbeatMs: 1000 });
    const status = async (id: string) => (await h.store.getRun(id))?.status;
    /** Real time only: the store's clock is not moved while this waits. */
    const promptly = async (id: string, want: RunStatus) => {
      const deadline = Date.now() + PROMPT_MS;
      while (Date.now() < deadline) {
        if ((await status(id)) === want) return;
        await sleep(5);
      }
      throw new Error(`run ${id} did not become ${want} within ${PROMPT_MS} ms: it is ${await status(id)}`);
    };
    const start = (workflow: string) => startRun(h.store, registry, { workflow, input: {} });
    return { h, deps, worker, status, promptly, start };
  }

  it('an approval and a signal wake their parked runs at once, with the clock standing still on SQLite', async (t) => {
    const s = await setup();
    if (!s) return t.skip();
    // Queued before the worker starts: its first look takes them (a new run's own wake is not this test's).
    const approval = await s.start('gate');
    const signal = await s.start('listen');
    s.worker();
    await s.promptly(approval.id, 'waiting');
    await s.promptly(signal.id, 'waiting');
    const clockAt = s.h.clock.now();

    await waits.decide(s.deps, alice, { runId: approval.id, approve: true });
    await s.promptly(approval.id, 'completed');
    await waits.signal(s.deps, alice, { runId: signal.id, name: 'go', payload: { n: 1 } });
    await s.promptly(signal.id, 'completed');

    expect([effects.get(`${approval.id}:after`), effects.get(`${signal.id}:after`)]).toEqual([1, 1]);
    if (name === 'sqlite') expect(s.h.clock.now()).toBe(clockAt);
  });

  it('a decision through another store object of this process wakes the worker too (a dashboard beside it)', async (t) => {
    const s = await setup();
    if (!s) return t.skip();
    const run = await s.start('gate');
    s.worker();
    await s.promptly(run.id, 'waiting');
    const dashboard = await s.h.reopen();
    await waits.decide({ ...s.deps, store: async () => dashboard }, alice, { runId: run.id, approve: true });
    await s.promptly(run.id, 'completed');
    expect(effects.get(`${run.id}:after`)).toBe(1);
  });

  it('an idle worker sleeps until the first due wait, not its poll: a sleep of a minute wakes at a minute', async (t) => {
    const s = await setup();
    if (!s) return t.skip();
    const run = await s.start('nap');
    // What the worker read as its next wake-up: the clock jumps only once it is asleep until it. (A jump while
    // its read is in flight would arm the sleep after the jump, and it would wake that much late.)
    const sleptFor: number[] = [];
    const watched: Store = {
      ...s.h.store,
      nextWakeIn: async (request) => {
        const ms = await s.h.store.nextWakeIn(request);
        if (ms !== null) sleptFor.push(ms);
        return ms;
      },
    };
    s.worker(watched);
    await s.promptly(run.id, 'waiting');
    const due = (await s.h.store.getWait(run.id, 'sleep', 'sleep#1'))!.dueAt!;
    for (let i = 0; sleptFor.length === 0; i++) {
      if (i > 2000) throw new Error('the worker never read its next wake-up');
      await sleep(5);
    }
    expect(sleptFor[0]).toBeGreaterThan(55_000);
    expect(sleptFor[0]).toBeLessThanOrEqual(60_000);
    // A margin for PostgreSQL, whose clock also ticks in real time while the test runs.
    await s.h.elapse(50_000);
    for (let i = 0; i < 20; i++) await s.h.elapse(1);
    expect(await s.status(run.id)).toBe('waiting');
    await s.h.elapse(11_000);
    await s.promptly(run.id, 'completed');
    expect(effects.get(`${run.id}:after`)).toBe(1);
    expect((await s.h.store.getWait(run.id, 'sleep', 'sleep#1'))!.decidedAt!).toBeGreaterThanOrEqual(due);
  });

  it('a slot that comes free is filled at once: concurrency 1 runs three queued runs back to back', async (t) => {
    const s = await setup();
    if (!s) return t.skip();
    const runs = [await s.start('quick'), await s.start('quick'), await s.start('quick')];
    const clockAt = s.h.clock.now();
    s.worker();
    for (const run of runs) await s.promptly(run.id, 'completed');
    expect(runs.map((r) => effects.get(`${r.id}:only`))).toEqual([1, 1, 1]);
    if (name === 'sqlite') expect(s.h.clock.now()).toBe(clockAt);
  });

  it('a due wait the worker cannot take (paused, cancelled, a workflow it does not serve) never makes it spin', async (t) => {
    const s = await setup();
    if (!s) return t.skip();
    const paused = await s.start('nap');
    const cancelled = await s.start('nap');
    const first = s.worker();
    await s.promptly(paused.id, 'waiting');
    await s.promptly(cancelled.id, 'waiting');
    first.worker.stop();
    await first.done;
    await s.h.store.actOnRun(paused.id, 'pause', 'alice');
    await s.h.store.actOnRun(cancelled.id, 'cancel', 'alice');
    // A waiting run due long ago whose workflow no worker here serves.
    await s.h.store.createRun({ id: 'unserved', workflow: 'elsewhere', inputJson: '{}', totalSteps: null });
    const taken = await s.h.store.claimRun({
      workerId: 'other',
      leaseMs: 60_000,
      workflows: ['elsewhere'],
      runId: 'unserved',
    });
    await s.h.store.recordWait({ runId: 'unserved', name: 'nap', kind: 'sleep', dueInMs: 1000 });
    expect(await s.h.store.parkRun('unserved', 'sleep', 'nap', 'other', taken!.attempts)).toBe('parked');
    await s.h.elapse(120_000);

    let claims = 0;
    let nextWakes = 0;
    const counted: Store = {
      ...s.h.store,
      claimRun: (request) => {
        claims++;
        return s.h.store.claimRun(request);
      },
      nextWakeIn: (request) => {
        nextWakes++;
        return s.h.store.nextWakeIn(request);
      },
    };
    // A poll of 100 ms (50-150 jittered) over one second of clock time: at most about 20 looks, not thousands.
    s.worker(counted, 100);
    if (name === 'sqlite') {
      for (let i = 0; i < 100; i++) await s.h.elapse(10);
    } else {
      await sleep(1000);
    }
    expect(claims).toBeGreaterThanOrEqual(1);
    expect(claims).toBeLessThanOrEqual(25);
    expect(nextWakes).toBeLessThanOrEqual(claims);
    expect([await s.status(paused.id), await s.status(cancelled.id), await s.status('unserved')]).toEqual([
      'paused',
      'cancelled',
      'waiting',
    ]);
  });
});
