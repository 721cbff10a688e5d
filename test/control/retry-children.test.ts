/**
 * Retrying a cancelled parent brings back the children its cancel took (lib/control/runs.ts over the store's
 * actOnRun), on both backends: each attached child its parent's cancel cancelled is retried in the same
 * transaction, with its own event and audit line, and the parent's wait for it is open again, so the parent waits
 * for the child's new end instead of being answered with the cancel. A detached child, and a child an operator
 * cancelled on its own before the parent's cancel, are left as they are. A worker in the test's process, on the
 * store's clock; the children wait for a signal.
 */
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { bulk, type Caller, type ControlDeps, runs } from '../../lib/control';
import type { ChildOutcome } from '../../lib/engine/children';
import { startRun } from '../../lib/engine/runs';
import { Worker } from '../../lib/engine/worker';
import { defineWorkflow, WorkflowRegistry } from '../../lib/engine/workflow';
import type { RunStatus } from '../../lib/store/contract';
import { type Backend, backends, type StoreHandle, untilRun } from '../support/backends';

const OPERATOR: Caller = { actor: 'olga (operator)', role: 'operator', channel: 'api' };

const hold = defineWorkflow({
  name: 'hold',
  input: z.object({}),
  async run(ctx) {
    await ctx.waitForSignal('go');
    return `went ${ctx.runId}`;
  },
});
/**
 * Two attached children and a detached one, all waiting for a signal; waits for the attached two in order. With
 * `settled`, answers how each ended instead of failing on one that did not complete.
 */
const brood = defineWorkflow({
  name: 'brood',
  input: z.object({ settled: z.boolean().default(false) }),
  async run(ctx, input) {
    const a = await ctx.startChild('a', 'hold', {});
    const b = await ctx.startChild('b', 'hold', {});
    await ctx.startChild('d', 'hold', {}, { detached: true });
    if (!input.settled) return ctx.waitForChildren<string>([a, b]);
    const ends: string[] = [];
    for (const id of [a, b]) {
      const end = await ctx.waitForChild<ChildOutcome>(id, { settled: true });
      ends.push(`${end.runId} ${end.status} ${end.output}`);
    }
    return ends;
  },
});
/** A child that has a child of its own: a cancel of the top takes both, and so does its retry bring both back. */
const middle = defineWorkflow({
  name: 'middle',
  input: z.object({}),
  async run(ctx) {
    return `middle of ${await ctx.waitForChild<string>(await ctx.startChild('leaf', 'hold', {}))}`;
  },
});
const top = defineWorkflow({
  name: 'top',
  input: z.object({}),
  async run(ctx) {
    return ctx.waitForChild<string>(await ctx.startChild('mid', 'middle', {}));
  },
});
const registry = new WorkflowRegistry([hold, brood, middle, top]);

let list: Backend[];
beforeAll(async () => {
  list = await backends();
});
const open: StoreHandle[] = [];
const workers: { worker: Worker; done: Promise<void> }[] = [];
afterEach(async () => {
  for (const w of workers.splice(0)) {
    w.worker.stop();
    await w.done;
  }
  for (const h of open.splice(0)) await h.close();
});

describe.each([['sqlite'], ['postgres']] as const)('retrying a parent its cancel took children from on %s', (name) => {
  async function setup() {
    const backend = list.find((b) => b.name === name);
    if (!backend) return null;
    const h = await backend.open();
    open.push(h);
    const w = new Worker({ store: h.store, registry, concurrency: 2, pollMs: 20, heartbeatMs: 50, clock: h.clock });
    workers.push({ worker: w, done: w.run() });
    const deps: ControlDeps = { store: async () => h.store, claimTtlMs: 30_000, maxBytes: 1_000_000 };
    const act = (action: 'cancel' | 'retry', runId: string, caller = OPERATOR) =>
      runs.act(deps, caller, { action, runId });
    const until = (id: string, want: RunStatus, attempts = 1) => untilRun(h, id, want, attempts);
    const status = async (id: string) => (await h.store.getRun(id))?.status;
    const statuses = async (ids: string[]) => Promise.all(ids.map(status));
    /**
     * Statuses just after a retry, which a worker may already have taken on: a run on its way again (queued, taken,
     * or parked once more) reads `going`.
     */
    const soon = async (ids: string[]) =>
      (await statuses(ids)).map((st) => (st === 'queued' || st === 'running' || st === 'waiting' ? 'going' : st));
    /** `status/attempts`: how many executions a run has had tells a retried run from one left alone. */
    const executions = async (ids: string[]) =>
      Promise.all(
        ids.map(async (id) => `${(await h.store.getRun(id))?.status}/${(await h.store.getRun(id))?.attempts}`),
      );
    const signal = (runId: string) =>
      h.store.decideWait({ runId, kind: 'signal', name: 'go', decisionJson: '{}', decidedBy: 'test' });
    const details = async (id: string) => (await h.store.listEvents(id)).map((e) => e.detail);
    /** The audit lines, oldest first, as `action target: detail`. */
    const audit = async () =>
      (await h.store.listAudit({ limit: 100 })).reverse().map((a) => `${a.action} ${a.target}: ${a.detail ?? ''}`);
    /** Starts a brood and waits until it and its three children are parked. */
    const brooding = async (id: string, settled: boolean) => {
      await startRun(h.store, registry, { workflow: 'brood', input: { settled }, id });
      for (const child of ['a', 'b', 'd']) await until(`${id}:${child}`, 'waiting');
      await until(id, 'waiting');
    };
    return { h, deps, act, until, statuses, soon, executions, signal, details, audit, brooding };
  }

  it('brings back both attached children, and the parent completes with their outputs', async (t) => {
    const s = await setup();
    if (!s) return t.skip();
    const kids = ['p1:a', 'p1:b', 'p1:d'];
    await s.brooding('p1', false);

    await s.act('cancel', 'p1');
    expect(await s.statuses(['p1', ...kids])).toEqual(['cancelled', 'cancelled', 'cancelled', 'waiting']);

    const retried = await s.act('retry', 'p1');
    expect(retried.status).toBe('queued');
    // In the retry's own transaction: the attached children are queued again, and the parent's waits for them open.
    expect(await s.soon(['p1', ...kids])).toEqual(['going', 'going', 'going', 'going']);
    for (const kid of ['p1:a', 'p1:b']) expect((await s.h.store.getWait('p1', 'child', kid))?.decidedAt).toBeNull();

    await s.until('p1:a', 'waiting', 2);
    await s.until('p1:b', 'waiting', 2);
    await s.until('p1', 'waiting', 2);
    expect(await s.executions(['p1', ...kids])).toEqual(['waiting/2', 'waiting/2', 'waiting/2', 'waiting/1']);
    await s.signal('p1:b');
    await s.until('p1:b', 'completed');
    await s.signal('p1:a');
    await s.until('p1', 'completed');
    expect(JSON.parse((await s.h.store.getRun('p1'))!.outputJson!)).toEqual(['went p1:a', 'went p1:b']);
    expect(await s.executions(kids)).toEqual(['completed/3', 'completed/3', 'waiting/1']);

    for (const kid of ['p1:a', 'p1:b'])
      expect((await s.details(kid)).filter((d) => d?.startsWith('cancel') || d?.startsWith('retry'))).toEqual([
        'cancel by olga (operator) (with its parent p1): waiting → cancelled',
        'retry by olga (operator) (with its parent p1): cancelled → queued',
      ]);
    expect(await s.details('p1')).toContain('child p1:a retried with this run: its wait for it is open again');
    // The detached child was never touched.
    expect((await s.details('p1:d')).filter((d) => d?.startsWith('cancel') || d?.startsWith('retry'))).toEqual([]);
    expect(await s.audit()).toEqual([
      'cancel p1: ',
      'retry p1: ',
      'retry p1:a: with its parent p1',
      'retry p1:b: with its parent p1',
    ]);
  });

  it('leaves a child an operator cancelled on its own before the parent’s cancel cancelled', async (t) => {
    const s = await setup();
    if (!s) return t.skip();
    const kids = ['p2:a', 'p2:b', 'p2:d'];
    await s.brooding('p2', true);

    // The parent is parked on p2:a, so p2:b's cancel is on its record without waking it.
    await s.act('cancel', 'p2:b');
    expect(await s.statuses(['p2', ...kids])).toEqual(['waiting', 'waiting', 'cancelled', 'waiting']);
    await s.act('cancel', 'p2');
    expect(await s.statuses(['p2', ...kids])).toEqual(['cancelled', 'cancelled', 'cancelled', 'waiting']);

    await s.act('retry', 'p2');
    expect(await s.soon(['p2', ...kids])).toEqual(['going', 'going', 'cancelled', 'going']);
    expect((await s.h.store.getWait('p2', 'child', 'p2:a'))?.decidedAt).toBeNull();
    expect(JSON.parse((await s.h.store.getWait('p2', 'child', 'p2:b'))!.decisionJson!).status).toBe('cancelled');

    await s.until('p2:a', 'waiting', 2);
    await s.signal('p2:a');
    await s.until('p2', 'completed');
    expect(JSON.parse((await s.h.store.getRun('p2'))!.outputJson!)).toEqual([
      'p2:a completed went p2:a',
      'p2:b cancelled null',
    ]);
    expect(await s.executions(kids)).toEqual(['completed/3', 'cancelled/1', 'waiting/1']);
    expect((await s.details('p2:b')).filter((d) => d?.startsWith('cancel') || d?.startsWith('retry'))).toEqual([
      'cancel by olga (operator): waiting → cancelled',
    ]);
    expect(await s.audit()).toEqual(['cancel p2:b: ', 'cancel p2: ', 'retry p2: ', 'retry p2:a: with its parent p2']);
  });

  it('leaves a child cancelled by an operator whose name reads like its parent’s cancel', async (t) => {
    const s = await setup();
    if (!s) return t.skip();
    const kids = ['p5:a', 'p5:b', 'p5:d'];
    await s.brooding('p5', true);

    // An actor's name is free text: this one makes the cancel's line read word for word as the parent's cascade.
    const mimic: Caller = { actor: 'mallory (with its parent p5)', role: 'operator', channel: 'api' };
    await s.act('cancel', 'p5:b', mimic);
    expect((await s.details('p5:b')).filter((d) => d?.startsWith('cancel'))).toEqual([
      'cancel by mallory (with its parent p5): waiting → cancelled',
    ]);
    await s.act('cancel', 'p5');
    await s.act('retry', 'p5');
    expect(await s.soon(['p5', ...kids])).toEqual(['going', 'going', 'cancelled', 'going']);
    expect(JSON.parse((await s.h.store.getWait('p5', 'child', 'p5:b'))!.decisionJson!).status).toBe('cancelled');
    expect(await s.audit()).toEqual(['cancel p5:b: ', 'cancel p5: ', 'retry p5: ', 'retry p5:a: with its parent p5']);
  });

  it('does the same in a bulk retry of the parent, with an audit line for each child', async (t) => {
    const s = await setup();
    if (!s) return t.skip();
    await s.brooding('p3', false);
    await s.act('cancel', 'p3');

    const report = await bulk.apply(s.deps, OPERATOR, { action: 'retry', ids: ['p3'], reason: 'retry the lot' });
    expect(report).toEqual({ matched: 1, done: 1, skipped: [] });
    expect(await s.soon(['p3', 'p3:a', 'p3:b', 'p3:d'])).toEqual(['going', 'going', 'going', 'going']);
    expect(await s.audit()).toEqual([
      'cancel p3: ',
      'retry p3: bulk retry of 1 selected runs; reason: retry the lot',
      'retry p3:a: bulk retry of 1 selected runs; with its parent p3; reason: retry the lot',
      'retry p3:b: bulk retry of 1 selected runs; with its parent p3; reason: retry the lot',
    ]);
  });

  it('brings back the children of a child its cancel took, each retried with its own parent', async (t) => {
    const s = await setup();
    if (!s) return t.skip();
    await startRun(s.h.store, registry, { workflow: 'top', input: {}, id: 't1' });
    await s.until('t1:mid:leaf', 'waiting');
    await s.until('t1:mid', 'waiting');
    await s.until('t1', 'waiting');

    await s.act('cancel', 't1');
    expect(await s.statuses(['t1', 't1:mid', 't1:mid:leaf'])).toEqual(['cancelled', 'cancelled', 'cancelled']);
    await s.act('retry', 't1');
    expect(await s.soon(['t1', 't1:mid', 't1:mid:leaf'])).toEqual(['going', 'going', 'going']);

    // Each parked again before the leaf ends, so each has had three executions by the end: parked, parked again, done.
    await s.until('t1:mid:leaf', 'waiting', 2);
    await s.until('t1:mid', 'waiting', 2);
    await s.until('t1', 'waiting', 2);
    await s.signal('t1:mid:leaf');
    await s.until('t1', 'completed');
    expect(JSON.parse((await s.h.store.getRun('t1'))!.outputJson!)).toBe('middle of went t1:mid:leaf');
    expect(await s.executions(['t1', 't1:mid', 't1:mid:leaf'])).toEqual(['completed/3', 'completed/3', 'completed/3']);
    expect((await s.details('t1:mid:leaf')).filter((d) => d?.startsWith('retry'))).toEqual([
      'retry by olga (operator) (with its parent t1:mid): cancelled → queued',
    ]);
    expect(await s.audit()).toEqual([
      'cancel t1: ',
      'retry t1: ',
      'retry t1:mid: with its parent t1',
      'retry t1:mid:leaf: with its parent t1:mid',
    ]);
  });
});
