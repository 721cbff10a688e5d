/**
 * Child runs in process, on both backends: a parent starts children as steps and parks until they end; the
 * store decides the parent's wait in the transaction that ends each child. One worker with one slot runs the
 * parent and all its children, which it could not if a waiting parent held its slot.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { ChildOutcome } from '../../lib/engine/children';
import { startRun } from '../../lib/engine/runs';
import { defineWorkflow, WorkflowRegistry } from '../../lib/engine/workflow';
import { NonRetryableError } from '../../lib/errors';
import type { RunStatus } from '../../lib/store/contract';
import { pruneAll } from '../../lib/store/shared/prune';
import { untilRun } from '../support/backends';
import { servedStores } from '../support/served-stores';

const effects = new Map<string, number>();
const bump = (key: string) => effects.set(key, (effects.get(key) ?? 0) + 1);

const double = defineWorkflow({
  name: 'double',
  input: z.object({ n: z.number().int() }),
  async run(ctx, input) {
    const { result } = await ctx.step('double', () => {
      bump(ctx.runId);
      if (input.n < 0) throw new NonRetryableError(`no negatives: ${input.n}`);
      return input.n * 2;
    });
    return result;
  },
});
const hold = defineWorkflow({
  name: 'hold',
  input: z.object({}),
  async run(ctx) {
    await ctx.waitForSignal('go');
    return 'went';
  },
});
const fan = defineWorkflow({
  name: 'fan',
  input: z.object({ count: z.number().int(), fail: z.number().int().optional() }),
  async run(ctx, input) {
    const ids: string[] = [];
    for (let i = 0; i < input.count; i++) {
      ids.push(await ctx.startChild(`double-${i}`, 'double', { n: i === input.fail ? -1 : i }));
    }
    const outputs = await ctx.waitForChildren<number>(ids);
    const { result } = await ctx.step('sum', () => {
      bump(`${ctx.runId}:sum`);
      return outputs.reduce((a, b) => a + b, 0);
    });
    return { outputs, sum: result };
  },
});
const settle = defineWorkflow({
  name: 'settle',
  input: z.object({}),
  async run(ctx) {
    const id = await ctx.startChild('bad', 'double', { n: -5 });
    return ctx.waitForChild<ChildOutcome>(id, { settled: true });
  },
});
const family = defineWorkflow({
  name: 'family',
  input: z.object({}),
  async run(ctx) {
    const attached = await ctx.startChild('attached', 'hold', {});
    await ctx.startChild('detached', 'hold', {}, { detached: true });
    return ctx.waitForChild(attached);
  },
});
const race = defineWorkflow({
  name: 'race',
  input: z.object({}),
  async run(ctx) {
    const ids: string[] = [];
    for (const name of ['a', 'b', 'c']) ids.push(await ctx.startChild(name, 'hold', {}));
    const first = await ctx.waitForFirstChild<string>(ids);
    const { result } = await ctx.step('after', () => {
      bump(`${ctx.runId}:after`);
      return first;
    });
    return result;
  },
});
/** Acts on the first child, then parks: its replay must answer the child it acted on. */
const raceThenWait = defineWorkflow({
  name: 'race-then-wait',
  input: z.object({}),
  async run(ctx) {
    const ids = [await ctx.startChild('a', 'hold', {}), await ctx.startChild('b', 'hold', {})];
    const first = await ctx.waitForFirstChild<string>(ids);
    const { result: actedOn } = await ctx.step('act', () => (first as { runId: string }).runId);
    await ctx.waitForSignal('go');
    return { actedOn, first: (first as { runId: string }).runId };
  },
});
/** Waits for its child, then for a person: the child may be pruned in between. */
const childThenApproval = defineWorkflow({
  name: 'child-then-approval',
  input: z.object({}),
  async run(ctx) {
    const id = await ctx.startChild('c', 'double', { n: 21 });
    const doubled = await ctx.waitForChild<number>(id);
    const { approved } = await ctx.waitForApproval('ship-it');
    return { doubled, approved };
  },
});
const registry = new WorkflowRegistry([double, hold, fan, settle, family, race, raceThenWait, childThenApproval]);

// Above servedStores(), so that it runs once the workers have stopped: see there.
afterEach(() => {
  effects.clear();
});
const stores = servedStores();

describe.each([['sqlite'], ['postgres']] as const)('child runs on %s', (name) => {
  async function setup() {
    const h = await stores.open(name);
    if (!h) return null;
    stores.serve(h, registry, { concurrency: 1 });
    const status = async (id: string) => (await h.store.getRun(id))?.status;
    const until = (id: string, want: RunStatus) => untilRun(h, id, want);
    const start = (workflow: string, input: object, id: string) => startRun(h.store, registry, { workflow, input, id });
    return { h, status, until, start };
  }

  it('fans out to 20 children and joins them on one slot: each child once, the join once', async (t) => {
    const s = await setup();
    if (!s) return t.skip();
    await s.start('fan', { count: 20 }, 'fan-1');
    await s.until('fan-1', 'completed');
    const parent = await s.h.store.getRun('fan-1');
    const outputs = Array.from({ length: 20 }, (_, i) => i * 2);
    expect(JSON.parse(parent!.outputJson!)).toEqual({ outputs, sum: 380 });
    for (let i = 0; i < 20; i++) {
      const child = await s.h.store.getRun(`fan-1:double-${i}`);
      expect([child?.status, child?.parentRunId, child?.detached]).toEqual(['completed', 'fan-1', false]);
      expect(effects.get(`fan-1:double-${i}`)).toBe(1);
    }
    expect(effects.get('fan-1:sum')).toBe(1);
    expect(effects.size).toBe(21);
    const waits = await s.h.store.listWaits('fan-1');
    expect(waits.map((w) => [w.kind, w.decidedBy])).toEqual(Array(20).fill(['child', 'child run']));
    // The run page's read: every child counted by status, the newest few as the parent filter lists them.
    const family = await s.h.store.childrenOf('fan-1', 5);
    expect(family.byStatus).toEqual({ completed: 20 });
    const listed = await s.h.store.listRuns({ parent: 'fan-1', limit: 5, claimTtlMs: 30_000 });
    expect(family.first.map((c) => c.id)).toEqual(listed.map((r) => r.id));
    expect(family.first.every((c) => c.detached === false)).toBe(true);
  });

  it('fails a parent whose child failed, naming the child; with settled it is told how the child ended', async (t) => {
    const s = await setup();
    if (!s) return t.skip();
    await s.start('fan', { count: 3, fail: 1 }, 'fan-2');
    await s.until('fan-2', 'failed');
    expect((await s.h.store.getRun('fan-2'))?.error).toBe('child run fan-2:double-1 failed: no negatives: -1');
    expect(effects.get('fan-2:sum')).toBeUndefined();

    await s.start('settle', {}, 'settle-1');
    await s.until('settle-1', 'completed');
    expect(JSON.parse((await s.h.store.getRun('settle-1'))!.outputJson!)).toEqual({
      runId: 'settle-1:bad',
      status: 'failed',
      output: null,
      error: 'no negatives: -5',
    });
  });

  it('cancels a waiting parent with its attached child, and leaves the detached one to finish', async (t) => {
    const s = await setup();
    if (!s) return t.skip();
    await s.start('family', {}, 'fam');
    await s.until('fam:attached', 'waiting');
    await s.until('fam:detached', 'waiting');
    await s.until('fam', 'waiting');
    await s.h.store.actOnRun('fam', 'cancel', 'alice (operator)');
    expect(await s.status('fam')).toBe('cancelled');
    expect(await s.status('fam:attached')).toBe('cancelled');
    expect(await s.status('fam:detached')).toBe('waiting');
    const events = await s.h.store.listEvents('fam:attached');
    expect(events.map((e) => e.detail)).toContain(
      'cancel by alice (operator) (with its parent fam): waiting → cancelled',
    );
    await s.h.store.decideWait({
      runId: 'fam:detached',
      kind: 'signal',
      name: 'go',
      decisionJson: '{"payload":1}',
      decidedBy: 'test',
    });
    await s.until('fam:detached', 'completed');
    expect(await s.status('fam')).toBe('cancelled');
  });
  it('wakes a parent waiting for the first of several children when one ends, and leaves the others going', async (t) => {
    const s = await setup();
    if (!s) return t.skip();
    await s.start('race', {}, 'race-1');
    for (const name of ['a', 'b', 'c']) await s.until(`race-1:${name}`, 'waiting');
    await s.until('race-1', 'waiting');
    expect((await s.h.store.listWaits('race-1')).map((w) => [w.kind, w.name, w.decidedAt === null])).toEqual([
      ['child', 'race-1:a', true],
      ['child', 'race-1:b', true],
      ['child', 'race-1:c', true],
    ]);
    await s.h.store.decideWait({
      runId: 'race-1:b',
      kind: 'signal',
      name: 'go',
      decisionJson: '{}',
      decidedBy: 'test',
    });
    await s.until('race-1', 'completed');
    expect(JSON.parse((await s.h.store.getRun('race-1'))!.outputJson!)).toEqual({ runId: 'race-1:b', output: 'went' });
    expect(effects.get('race-1:after')).toBe(1);
    expect([await s.status('race-1:a'), await s.status('race-1:c')]).toEqual(['waiting', 'waiting']);
  });

  // On PostgreSQL a child's end is stamped with its transaction's start: a child whose ending transaction began
  // first but committed last is recorded as the earlier end, after the parent acted on the other one.
  it('answers a replay with the child the run acted on, whatever end times the store recorded later', async (t) => {
    const s = await setup();
    if (!s) return t.skip();
    const go = (runId: string) =>
      s.h.store.decideWait({ runId, kind: 'signal', name: 'go', decisionJson: '{}', decidedBy: 'test' });
    await s.start('race-then-wait', {}, 'rw');
    for (const name of ['a', 'b']) await s.until(`rw:${name}`, 'waiting');
    await s.until('rw', 'waiting');
    await go('rw:a');
    await s.until('rw:a', 'completed');
    await s.until('rw', 'waiting');
    await go('rw:b');
    await s.until('rw:b', 'completed');
    await s.h.exec(`UPDATE waits SET decided_at = (SELECT decided_at - 1 FROM waits WHERE run_id = 'rw' AND name = 'rw:a')
      WHERE run_id = 'rw' AND name = 'rw:b'`);
    await go('rw');
    await s.until('rw', 'completed');
    expect(JSON.parse((await s.h.store.getRun('rw'))!.outputJson!)).toEqual({ actedOn: 'rw:a', first: 'rw:a' });
  });

  it('answers a parent from its decided wait when its ended child was pruned meanwhile', async (t) => {
    const s = await setup();
    if (!s) return t.skip();
    await s.start('child-then-approval', {}, 'cp');
    await s.until('cp:c', 'completed');
    // Its second execution, woken by the child's end, parks on the approval.
    await untilRun(s.h, 'cp', 'waiting', 2);
    expect((await s.h.store.listWaits('cp')).map((w) => [w.kind, w.decidedAt === null])).toEqual([
      ['child', false],
      ['approval', true],
    ]);
    // `waybill prune` takes every run that ended before the cut-off; the parent is still going.
    await pruneAll(s.h.store, { before: (await s.h.now()) + 1 });
    expect(await s.h.store.getRun('cp:c')).toBeNull();
    await s.h.store.decideWait({
      runId: 'cp',
      kind: 'approval',
      name: 'ship-it',
      decisionJson: '{"approved":true}',
      decidedBy: 'alice',
    });
    await s.until('cp', 'completed');
    expect(JSON.parse((await s.h.store.getRun('cp'))!.outputJson!)).toEqual({ doubled: 42, approved: true });
  });

  it('does not park on several waits when one of them was decided meanwhile', async (t) => {
    const s = await setup();
    if (!s) return t.skip();
    const store = s.h.store;
    await store.createRun({ id: 'p', workflow: 'nobody-serves', inputJson: '{}', totalSteps: null });
    const taken = await store.claimRun({
      workerId: 'seeder',
      leaseMs: 60_000,
      workflows: ['nobody-serves'],
      runId: 'p',
    });
    for (const name of ['x', 'y']) await store.recordWait({ runId: 'p', name, kind: 'child' });
    await store.decideWait({ runId: 'p', kind: 'child', name: 'y', decisionJson: '{}', decidedBy: 'test' });
    expect(await store.parkRun('p', 'child', ['x', 'y'], 'seeder', taken!.attempts)).toBe('decided');
    expect(await s.status('p')).toBe('running');
    expect(await store.parkRun('p', 'child', ['x'], 'seeder', taken!.attempts)).toBe('parked');
  });
});
