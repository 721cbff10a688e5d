import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { runAgent } from '../../lib/checkpoint/agent';
import { ManualClock } from '../../lib/clock';
import { startRun } from '../../lib/engine/runs';
import { Worker } from '../../lib/engine/worker';
import { defineWorkflow, WorkflowRegistry } from '../../lib/engine/workflow';
import { InvalidInputError, InvalidTransitionError } from '../../lib/errors';
import type { RunStatus } from '../../lib/store/contract';
import { openSqliteStore, type SqliteStore } from '../../lib/store/sqlite';

/**
 * The store, the workers and their checkpoints share one ManualClock: polls, heartbeats, run-lease renewals
 * and retry backoff fire as the test moves it, and nothing here sleeps.
 */
let clock: ManualClock;
let dir: string;
let store: SqliteStore;
const effects = new Map<string, number>();
let gate: { open: Promise<void>; release: () => void };

const counter = defineWorkflow({
  name: 'counter',
  input: z.object({
    count: z.number().int().positive(),
    failUntilAttempt: z.number().int().default(0),
    gated: z.boolean().default(false),
  }),
  maxAttempts: 4,
  totalSteps: (input) => input.count,
  async run(ctx, input) {
    const items = Array.from({ length: input.count }, (_, i) => i);
    return runAgent(items, ctx, async (item, step) => {
      effects.set(step.idempotencyKey, (effects.get(step.idempotencyKey) ?? 0) + 1);
      if (step.attempt <= input.failUntilAttempt) throw new Error(`injected failure ${step.attempt}`);
      if (input.gated) {
        await new Promise<void>((resolve, reject) => {
          void gate.open.then(resolve);
          step.signal.addEventListener('abort', () => reject(step.signal.reason), { once: true });
        });
      }
      return item * 2;
    });
  },
});

/** A workflow of its own steps: it names its next key in a commit, then fails before running it. */
const aheadThenFail = defineWorkflow({
  name: 'ahead-then-fail',
  input: z.object({}),
  maxAttempts: 1,
  async run(ctx) {
    await ctx.runOnce(`${ctx.runId}:first`, () => 'done', {
      step: 0,
      next: { idemKey: `${ctx.runId}:second`, step: 1 },
    });
    throw new Error('the model said no');
  },
});

const registry = new WorkflowRegistry([counter, aheadThenFail]);
const workers: Worker[] = [];
const running: Promise<void>[] = [];
function worker(): Promise<void> {
  const w = new Worker({ store, registry, pollMs: 10, heartbeatMs: 50, retry: { baseMs: 1, maxMs: 5 }, clock });
  workers.push(w);
  const run = w.run();
  running.push(run);
  return run;
}

/** Moves the clock 10 ms at a time (10 s at most) until predicate holds: no real time passes. */
async function tickUntil(predicate: () => Promise<boolean>, what: string): Promise<void> {
  for (let i = 0; i < 1000; i++) {
    if (await predicate()) return;
    await clock.tick(10);
  }
  throw new Error(`timed out waiting for ${what}: ${JSON.stringify(await store.listRuns({ claimTtlMs: 30_000 }))}`);
}
const statusIs = (id: string, status: RunStatus) => async () => (await store.getRun(id))?.status === status;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'waybill-engine-'));
  clock = new ManualClock();
  store = openSqliteStore({ path: join(dir, 'w.db'), synchronous: 'normal', clock });
  effects.clear();
  let release!: () => void;
  gate = { open: new Promise<void>((r) => (release = r)), release };
});

afterEach(async () => {
  for (const w of workers.splice(0)) w.stop();
  gate.release();
  await clock.runUntil(Promise.allSettled(running.splice(0)));
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('engine', () => {
  it('rejects input that does not match the workflow schema, naming the field, and creates nothing', async () => {
    await expect(startRun(store, registry, { workflow: 'counter', input: { count: 'x' } })).rejects.toThrow(/count:/);
    await expect(startRun(store, registry, { workflow: 'nope', input: {} })).rejects.toThrow(/workflow "nope"/);
    await expect(
      startRun(store, registry, { workflow: 'counter', input: { count: 1 }, id: 'bad id!' }),
    ).rejects.toBeInstanceOf(InvalidInputError);
    expect(await store.listRuns({ claimTtlMs: 30_000 })).toEqual([]);
  });

  it('runs a run to completion, each step once, retrying injected failures', async () => {
    const run = await startRun(store, registry, {
      workflow: 'counter',
      input: { count: 5, failUntilAttempt: 2 },
      id: 'r1',
    });
    const done = worker();
    await tickUntil(statusIs(run.id, 'completed'), 'completion');
    expect((await store.listCommitted('r1')).length).toBe(5);
    expect([...effects.values()]).toEqual([3, 3, 3, 3, 3]);
    const failed = (await store.listEvents('r1')).filter((e) => e.outcome === 'failed');
    expect(failed.length).toBe(10);
    expect(await store.loadProgress('r1')).toMatchObject({ step: 5, executed: 5, skipped: 0 });
    workers[0]!.stop();
    await clock.runUntil(done);
  });

  it('gives back the claim a workflow took ahead and never used when the workflow fails: no claim left in doubt', async () => {
    await startRun(store, registry, { workflow: 'ahead-then-fail', input: {}, id: 'r-ahead' });
    void worker();
    await tickUntil(statusIs('r-ahead', 'failed'), 'failure');
    expect((await store.getRun('r-ahead'))?.error).toBe('the model said no');
    expect((await store.listCommitted('r-ahead')).map((c) => c.idemKey)).toEqual(['r-ahead:first']);
    // The second step's claim, taken in the first step's commit, went back with no failed event: it never ran.
    expect(await store.listClaims({ runId: 'r-ahead', claimTtlMs: 30_000 })).toEqual([]);
    expect((await store.listEvents('r-ahead')).map((e) => e.outcome)).toEqual([]);
  });

  it('fails the run with the error once maxAttempts is spent', async () => {
    await startRun(store, registry, { workflow: 'counter', input: { count: 2, failUntilAttempt: 9 }, id: 'r2' });
    void worker();
    await tickUntil(statusIs('r2', 'failed'), 'failure');
    expect((await store.getRun('r2'))?.error).toMatch(/failed after 4 attempt/);
    expect(effects.get('r2:step:0')).toBe(4);
    await expect(store.actOnRun('r2', 'pause', 'test')).rejects.toBeInstanceOf(InvalidTransitionError);
    effects.clear();
    await store.actOnRun('r2', 'retry', 'test');
    // Still failing: retry re-queues it, and it fails again after another 4 attempts.
    await tickUntil(statusIs('r2', 'failed'), 'second failure');
    expect(effects.get('r2:step:0')).toBe(4);
    const operator = (await store.listEvents('r2')).filter((e) => e.outcome === 'operator');
    expect(operator.map((e) => e.detail)).toEqual(['retry by test: failed → queued']);
  });

  it('pauses after the step in hand (committed once, no failed event, next step not started), resumes, and cancels', async () => {
    await startRun(store, registry, { workflow: 'counter', input: { count: 3, gated: true }, id: 'r3' });
    void worker();
    await tickUntil(
      async () => (await store.listClaims({ runId: 'r3', claimTtlMs: 30_000 })).length === 1,
      'first claim',
    );
    await store.actOnRun('r3', 'pause', 'test');
    // The worker learns of the pause at its next lease renewal, and waits for the step in hand.
    await tickUntil(async () => (await store.listEvents('r3')).length === 1, 'the pause event');
    await clock.tick(200);
    expect((await store.getRun('r3'))?.owner).not.toBeNull();
    gate.release();
    await tickUntil(async () => (await store.getRun('r3'))?.owner === null, 'the worker letting go');
    expect((await store.getRun('r3'))?.status).toBe('paused');
    expect((await store.listCommitted('r3')).map((c) => c.idemKey)).toEqual(['r3:step:0']);
    expect(await store.listClaims({ runId: 'r3', claimTtlMs: 30_000 })).toEqual([]);
    expect((await store.listEvents('r3')).map((e) => e.outcome)).toEqual(['operator']);
    expect(Object.fromEntries(effects)).toEqual({ 'r3:step:0': 1 });
    await store.actOnRun('r3', 'resume', 'test');
    await tickUntil(statusIs('r3', 'completed'), 'completion after resume');
    expect((await store.listCommitted('r3')).length).toBe(3);
    expect(Object.fromEntries(effects)).toEqual({ 'r3:step:0': 1, 'r3:step:1': 1, 'r3:step:2': 1 });

    await startRun(store, registry, { workflow: 'counter', input: { count: 3 }, id: 'r4' });
    await store.actOnRun('r4', 'cancel', 'test');
    await clock.tick(100);
    expect((await store.getRun('r4'))?.status).toBe('cancelled');
    expect(await store.listCommitted('r4')).toEqual([]);
  });
});
