/**
 * Durable waits in process, on both backends: a worker parks a run at its wait and lets it go, a decision
 * (lib/control/waits.ts) queues it again, the next take replays to the decided wait and goes on. The store,
 * the workers and their checkpoints share the backend's test clock (test/support/backends.ts), so a sleep of
 * a minute passes when the test says so.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { waits } from '../../lib/control';
import type { Caller } from '../../lib/control/caller';
import { DURATION_BOUNDS_MS, renderMetrics } from '../../lib/data/metrics-text';
import { startRun } from '../../lib/engine/runs';
import { defineWorkflow, WorkflowRegistry } from '../../lib/engine/workflow';
import { ForbiddenError, InvalidTransitionError, RunRejectedError, WaitDecidedError } from '../../lib/errors';
import type { RunStatus } from '../../lib/store/contract';
import { untilRun } from '../support/backends';
import { servedStores } from '../support/served-stores';

const effects = new Map<string, number>();
const count = (key: string) => effects.get(key) ?? 0;
const bump = (key: string) => effects.set(key, count(key) + 1);

const gate = defineWorkflow({
  name: 'gate',
  input: z.object({ timeoutMs: z.number().optional(), onTimeout: z.enum(['approve', 'reject']).optional() }),
  async run(ctx, input) {
    await ctx.step('before', () => bump(`${ctx.runId}:before`));
    const review = await ctx.waitForApproval('review', {
      details: { draft: 'hello' },
      timeoutMs: input.timeoutMs,
      onTimeout: input.onTimeout,
    });
    if (!review.approved) throw new RunRejectedError(review.note ?? 'no');
    await ctx.step('after', () => bump(`${ctx.runId}:after`));
    return review;
  },
});
const listen = defineWorkflow({
  name: 'listen',
  input: z.object({ timeoutMs: z.number().optional() }),
  async run(ctx, input) {
    const got = await ctx.waitForSignal('go', { timeoutMs: input.timeoutMs });
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
  run: async (ctx) => (await ctx.step('only', () => 1)).result,
});
const registry = new WorkflowRegistry([gate, listen, nap, quick]);

const alice: Caller = { actor: 'alice (operator)', role: 'operator', channel: 'api' };
const bob: Caller = { actor: 'bob (operator)', role: 'operator', channel: 'dashboard' };
const viewer: Caller = { actor: 'vic (viewer)', role: 'viewer', channel: 'api' };

// Above servedStores(), so that it runs once the workers have stopped: see there.
afterEach(() => {
  effects.clear();
});
const stores = servedStores();

describe.each([['sqlite'], ['postgres']] as const)('durable waits on %s', (name) => {
  async function setup() {
    const h = await stores.open(name);
    if (!h) return null;
    const deps = { store: async () => h.store, claimTtlMs: 30_000, maxBytes: 1_000_000 };
    const worker = () => stores.serve(h, registry, { concurrency: 1 });
    const status = async (id: string) => (await h.store.getRun(id))?.status;
    const until = (id: string, want: RunStatus) => untilRun(h, id, want);
    const start = (workflow: string, input: object = {}) => startRun(h.store, registry, { workflow, input });
    return { h, deps, worker, status, until, start };
  }

  it('parks at an approval without holding the worker, resumes once approved, and a second decision is 409', async (t) => {
    const s = await setup();
    if (!s) return t.skip();
    s.worker();
    const run = await s.start('gate');
    await s.until(run.id, 'waiting');
    const parked = await s.h.store.getRun(run.id);
    expect([parked!.owner, parked!.leaseExpiresAt]).toEqual([null, null]);
    // Concurrency 1, and the one slot is free: another run completes while the first waits.
    const other = await s.start('quick');
    await s.until(other.id, 'completed');
    expect(await s.status(run.id)).toBe('waiting');
    await s.h.elapse(2000);
    const summary = await s.h.store.waitingSummary();
    expect(summary.map((w) => [w.kind, w.runs])).toEqual([['approval', 1]]);
    expect(summary[0]!.ageSeconds).toBeGreaterThanOrEqual(2);
    const text = await renderMetrics({
      ...(await s.h.store.metricsSnapshot({ claimTtlMs: 30_000, boundsMs: DURATION_BOUNDS_MS })),
      waiting: summary,
    });
    expect(text).toContain('waybill_runs_waiting{kind="approval"} 1\n');
    expect(text).toContain('waybill_runs_waiting{kind="sleep"} 0\n');
    expect(text).toContain('waybill_runs{status="waiting"} 1\n');
    const [wait] = await s.h.store.listWaits(run.id);
    expect(waits.waitView(wait!)).toMatchObject({
      name: 'review',
      kind: 'approval',
      details: { draft: 'hello' },
      decidedAt: null,
    });

    await waits.decide(s.deps, alice, { runId: run.id, approve: true, note: 'ship it' });
    await s.until(run.id, 'completed');
    expect([count(`${run.id}:before`), count(`${run.id}:after`)]).toEqual([1, 1]);
    expect(JSON.parse((await s.h.store.getRun(run.id))!.outputJson!)).toMatchObject({
      approved: true,
      by: 'alice (operator)',
      note: 'ship it',
      timedOut: false,
    });

    // Completed since: still the second decision of a decided wait (409 CONFLICT), not a refusal by status.
    await expect(
      waits.decide(s.deps, bob, { runId: run.id, name: 'review', approve: false, note: 'too late' }),
    ).rejects.toBeInstanceOf(WaitDecidedError);
    const audit = await s.h.store.listAudit({ runId: run.id });
    expect(audit.map((a) => [a.action, a.actor, a.detail])).toEqual([['approve', 'alice (operator)', 'ship it']]);
    const events = (await s.h.store.listEvents(run.id)).filter((e) => e.outcome === 'operator').map((e) => e.detail);
    expect(events).toEqual(['approval review approved by alice (operator): ship it']);
  });

  it('a second decision on a parked run is 409 and changes nothing; of two at one instant exactly one wins', async (t) => {
    const s = await setup();
    if (!s) return t.skip();
    const w = s.worker();
    const run = await s.start('gate');
    await s.until(run.id, 'waiting');
    w.worker.stop();
    await w.done;
    const results = await Promise.allSettled([
      waits.decide(s.deps, alice, { runId: run.id, approve: true }),
      waits.decide(s.deps, bob, { runId: run.id, approve: false, note: 'no' }),
    ]);
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    const lost = results.filter((r) => r.status === 'rejected');
    expect(lost).toHaveLength(1);
    expect((lost[0] as PromiseRejectedResult).reason).toBeInstanceOf(WaitDecidedError);
    expect((lost[0] as PromiseRejectedResult).reason.code).toBe('CONFLICT');
    expect(await s.h.store.listAudit({ runId: run.id })).toHaveLength(1);
    expect(await s.status(run.id)).toBe('queued');
  });

  it('a rejection ends the run rejected with its note, and the step after the gate never runs', async (t) => {
    const s = await setup();
    if (!s) return t.skip();
    s.worker();
    const run = await s.start('gate');
    await s.until(run.id, 'waiting');
    await expect(waits.decide(s.deps, alice, { runId: run.id, approve: false })).rejects.toThrow(/note/);
    await waits.decide(s.deps, alice, { runId: run.id, approve: false, note: 'wrong customer' });
    await s.until(run.id, 'rejected');
    expect((await s.h.store.getRun(run.id))!.error).toBe('wrong customer');
    expect([count(`${run.id}:before`), count(`${run.id}:after`)]).toEqual([1, 0]);
    expect((await s.h.store.listAudit({ runId: run.id })).map((a) => [a.action, a.detail])).toEqual([
      ['reject', 'wrong customer'],
    ]);
    // Rejected is finished: a prune removes the run, and its waits with it.
    const pruned = await s.h.store.pruneBatch({ before: (await s.h.now()) + 10, batchSize: 100 });
    expect(pruned.runs).toBe(1);
    expect([await s.h.store.getRun(run.id), await s.h.store.listWaits(run.id)]).toEqual([null, []]);
  });

  it("a viewer's approval is refused and changes nothing", async (t) => {
    const s = await setup();
    if (!s) return t.skip();
    s.worker();
    const run = await s.start('gate');
    await s.until(run.id, 'waiting');
    await expect(waits.decide(s.deps, viewer, { runId: run.id, approve: true })).rejects.toBeInstanceOf(ForbiddenError);
    expect((await s.h.store.getWait(run.id, 'approval', 'review'))!.decidedAt).toBeNull();
    expect(await s.h.store.listAudit({ runId: run.id })).toHaveLength(0);
    expect(await s.status(run.id)).toBe('waiting');
  });

  it('a signal sent before the run reaches its wait is delivered there; sent twice, the first payload stands', async (t) => {
    const s = await setup();
    if (!s) return t.skip();
    const run = await s.start('listen');
    await waits.signal(s.deps, alice, { runId: run.id, name: 'go', payload: { n: 1 } });
    await expect(waits.signal(s.deps, bob, { runId: run.id, name: 'go', payload: { n: 2 } })).rejects.toBeInstanceOf(
      WaitDecidedError,
    );
    s.worker();
    await s.until(run.id, 'completed');
    expect(JSON.parse((await s.h.store.getRun(run.id))!.outputJson!)).toMatchObject({
      received: true,
      payload: { n: 1 },
      by: 'alice (operator)',
    });
    expect(count(`${run.id}:after`)).toBe(1);
    expect((await s.h.store.listAudit({ runId: run.id })).map((a) => a.action)).toEqual(['signal']);
  });

  it('a signal sent to a parked run wakes it', async (t) => {
    const s = await setup();
    if (!s) return t.skip();
    s.worker();
    const run = await s.start('listen');
    await s.until(run.id, 'waiting');
    await waits.signal(s.deps, alice, { runId: run.id, name: 'go', payload: 'now' });
    // The signal queued the run and woke the idle worker in this process (test/engine/wakes.test.ts times it).
    expect(['queued', 'running', 'completed']).toContain(await s.status(run.id));
    await s.until(run.id, 'completed');
    expect(JSON.parse((await s.h.store.getRun(run.id))!.outputJson!)).toMatchObject({ received: true, payload: 'now' });
  });

  it('a timeout takes its configured path: approve, reject, and a signal that never came', async (t) => {
    const s = await setup();
    if (!s) return t.skip();
    s.worker();
    const yes = await s.start('gate', { timeoutMs: 5000, onTimeout: 'approve' });
    const no = await s.start('gate', { timeoutMs: 5000 });
    const silent = await s.start('listen', { timeoutMs: 5000 });
    for (const id of [yes.id, no.id, silent.id]) await s.until(id, 'waiting');
    await s.h.elapse(6000);
    await s.until(yes.id, 'completed');
    await s.until(no.id, 'rejected');
    await s.until(silent.id, 'completed');
    expect(JSON.parse((await s.h.store.getRun(yes.id))!.outputJson!)).toMatchObject({
      approved: true,
      by: 'timeout',
      timedOut: true,
    });
    expect(JSON.parse((await s.h.store.getRun(silent.id))!.outputJson!)).toEqual({ received: false, timedOut: true });
    expect([count(`${yes.id}:after`), count(`${no.id}:after`), count(`${silent.id}:after`)]).toEqual([1, 0, 1]);
  });

  it('a sleep survives a worker restart and wakes at its time, not before', async (t) => {
    const s = await setup();
    if (!s) return t.skip();
    const first = s.worker();
    const run = await s.start('nap');
    await s.until(run.id, 'waiting');
    const due = (await s.h.store.getWait(run.id, 'sleep', 'sleep#1'))!.dueAt!;
    first.worker.stop();
    await first.done;
    s.worker();
    await s.h.elapse(30_000);
    for (let i = 0; i < 20; i++) await s.h.elapse(10);
    expect(await s.status(run.id)).toBe('waiting');
    expect(count(`${run.id}:after`)).toBe(0);
    await s.h.elapse(31_000);
    await s.until(run.id, 'completed');
    expect(count(`${run.id}:after`)).toBe(1);
    const woke = (await s.h.store.getWait(run.id, 'sleep', 'sleep#1'))!.decidedAt!;
    expect(woke).toBeGreaterThanOrEqual(due);
  });

  it('pause and cancel work on a waiting run', async (t) => {
    const s = await setup();
    if (!s) return t.skip();
    s.worker();
    const paused = await s.start('gate');
    const cancelled = await s.start('gate');
    await s.until(paused.id, 'waiting');
    await s.until(cancelled.id, 'waiting');
    await s.h.store.actOnRun(paused.id, 'pause', 'alice');
    await s.h.store.actOnRun(cancelled.id, 'cancel', 'alice');
    await waits.decide(s.deps, alice, { runId: paused.id, approve: true });
    expect(await s.status(paused.id)).toBe('paused');
    await expect(waits.decide(s.deps, alice, { runId: cancelled.id, approve: true })).rejects.toBeInstanceOf(
      InvalidTransitionError,
    );
    await s.h.store.actOnRun(paused.id, 'resume', 'alice');
    await s.until(paused.id, 'completed');
    expect(count(`${paused.id}:after`)).toBe(1);
  });
});
