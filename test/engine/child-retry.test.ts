/**
 * A child retried after its end, on both backends: the end that did not complete is its parent's answer only once
 * the parent has acted on it (lib/engine/children.ts, settleChild in sqlite/waits.ts and postgres/waits.ts). A
 * parent that failed on it, or was cancelled with it, takes the child's new end when retried; a parent that went on
 * from it keeps it, so its replay takes the branch it took; a step the parent committed after the child's end but
 * before it looked does not count as acting on it. One worker in the test's process, on the store's clock.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { ChildOutcome } from '../../lib/engine/children';
import { startRun } from '../../lib/engine/runs';
import { defineWorkflow, WorkflowRegistry } from '../../lib/engine/workflow';
import { NonRetryableError } from '../../lib/errors';
import type { RunStatus, Store } from '../../lib/store/contract';
import { untilRun } from '../support/backends';
import { servedStores } from '../support/served-stores';

const effects = new Map<string, number>();
const bump = (key: string) => effects.set(key, (effects.get(key) ?? 0) + 1);
/** Keys whose step fails once (then succeeds when retried). */
const failOnce = new Set<string>();
/** The store of the test running, for a step that watches another run. */
let current: Store | null = null;

const pay = defineWorkflow({
  name: 'pay',
  input: z.object({ n: z.number().int() }),
  async run(ctx, input) {
    const { result } = await ctx.step('work', () => {
      bump(ctx.runId);
      if (failOnce.delete(ctx.runId)) throw new NonRetryableError(`declined ${input.n}`);
      return input.n * 10;
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
/** Fails when its child fails: nothing of it depends on that end. */
const order = defineWorkflow({
  name: 'order',
  input: z.object({}),
  async run(ctx) {
    const id = await ctx.startChild('pay', 'pay', { n: 1 });
    const paid = await ctx.waitForChild<number>(id);
    const { result } = await ctx.step('ship', () => {
      bump(`${ctx.runId}:ship`);
      return paid;
    });
    return result;
  },
});
/** Goes on from how its child ended, down one branch or the other, then fails once at a later step. */
const branch = defineWorkflow({
  name: 'branch',
  input: z.object({}),
  async run(ctx) {
    const id = await ctx.startChild('pay', 'pay', { n: 2 });
    const outcome = await ctx.waitForChild<ChildOutcome>(id, { settled: true });
    if (outcome.status === 'completed') await ctx.step('ship', () => bump(`${ctx.runId}:ship`));
    else await ctx.step('refund', () => bump(`${ctx.runId}:refund`));
    await ctx.step('finish', () => {
      if (failOnce.delete(`${ctx.runId}:finish`)) throw new NonRetryableError('finish failed once');
      return 1;
    });
    return outcome.status;
  },
});
/** Waits for a child that waits for a signal: cancelled with it, both retried. */
const holder = defineWorkflow({
  name: 'holder',
  input: z.object({}),
  async run(ctx) {
    const id = await ctx.startChild('h', 'hold', {});
    return ctx.waitForChild<string>(id);
  },
});
/** Starts its child, does a step of its own that ends after the child has failed, then looks at the child. */
const workFirst = defineWorkflow({
  name: 'work-first',
  input: z.object({}),
  async run(ctx) {
    const id = await ctx.startChild('pay', 'pay', { n: 3 });
    await ctx.step('own-work', async () => {
      while ((await current!.getRun(id))?.status !== 'failed') await new Promise((r) => setTimeout(r, 2));
      bump(`${ctx.runId}:own-work`);
      return 1;
    });
    // The SQLite test clock stands still unless moved: without this the step's commit and the parent's look at its
    // child would share one instant, and a commit at the instant of the read counts as acting on it.
    await ctx.sleep(5);
    return ctx.waitForChild<number>(id);
  },
});
/** Asks a person in the light of how its child ended, then fails once at a step. */
const ask = defineWorkflow({
  name: 'ask',
  input: z.object({}),
  async run(ctx) {
    const id = await ctx.startChild('pay', 'pay', { n: 4 });
    const outcome = await ctx.waitForChild<ChildOutcome>(id, { settled: true });
    await ctx.waitForApproval(outcome.status === 'completed' ? 'ship' : 'refund');
    await ctx.step('finish', () => {
      if (failOnce.delete(`${ctx.runId}:finish`)) throw new NonRetryableError('finish failed once');
      return 1;
    });
    return outcome.status;
  },
});
const registry = new WorkflowRegistry([pay, hold, order, branch, holder, workFirst, ask]);

// Above servedStores(), so that it runs once the workers have stopped: see there.
afterEach(() => {
  effects.clear();
  failOnce.clear();
  current = null;
});
const stores = servedStores();

describe.each([['sqlite'], ['postgres']] as const)('a retried child and its parent on %s', (name) => {
  async function setup() {
    const h = await stores.open(name);
    if (!h) return null;
    current = h.store;
    stores.serve(h, registry, { concurrency: 2 });
    const until = (id: string, want: RunStatus) => untilRun(h, id, want);
    const start = (workflow: string, id: string) => startRun(h.store, registry, { workflow, input: {}, id });
    const retry = (id: string) => h.store.actOnRun(id, 'retry', 'alice (operator)');
    const details = async (id: string) => (await h.store.listEvents(id)).map((e) => e.detail);
    return { h, until, start, retry, details };
  }

  it('a parent failed by its failed child completes with the child’s output once both are retried', async (t) => {
    const s = await setup();
    if (!s) return t.skip();
    failOnce.add('o1:pay');
    await s.start('order', 'o1');
    await s.until('o1', 'failed');
    expect((await s.h.store.getRun('o1'))?.error).toBe('child run o1:pay failed: declined 1');

    await s.retry('o1:pay');
    await s.until('o1:pay', 'completed');
    expect(await s.details('o1')).toContain(
      'child o1:pay completed, in place of its earlier end (failed), which this run had not acted on',
    );
    await s.retry('o1');
    await s.until('o1', 'completed');
    expect(JSON.parse((await s.h.store.getRun('o1'))!.outputJson!)).toBe(10);
    expect([effects.get('o1:pay'), effects.get('o1:ship')]).toEqual([2, 1]);
    // Its read of the first end is on the record, decided as it read it.
    const read = await s.h.store.getWait('o1', 'child', 'o1:pay#2');
    expect([read?.decidedBy, JSON.parse(read!.decisionJson!).status]).toEqual(['its parent, reading', 'failed']);
  });

  it('a parent that went on from its child’s failure keeps it: its replay takes the branch it took', async (t) => {
    const s = await setup();
    if (!s) return t.skip();
    failOnce.add('b1:pay');
    failOnce.add('b1:finish');
    await s.start('branch', 'b1');
    await s.until('b1', 'failed');
    expect(effects.get('b1:refund')).toBe(1);

    await s.retry('b1:pay');
    await s.until('b1:pay', 'completed');
    expect(await s.details('b1')).toContain(
      'child b1:pay completed again; this run keeps its earlier end (failed), which it acted on',
    );
    await s.retry('b1');
    await s.until('b1', 'completed');
    expect(JSON.parse((await s.h.store.getRun('b1'))!.outputJson!)).toBe('failed');
    expect([effects.get('b1:refund'), effects.get('b1:ship')]).toEqual([1, undefined]);
    expect(JSON.parse((await s.h.store.getWait('b1', 'child', 'b1:pay'))!.decisionJson!).status).toBe('failed');
  });

  it('a parent that asked a person in the light of its child’s failure keeps it, though it committed no step', async (t) => {
    const s = await setup();
    if (!s) return t.skip();
    failOnce.add('a1:pay');
    failOnce.add('a1:finish');
    await s.start('ask', 'a1');
    while (!(await s.h.store.getWait('a1', 'approval', 'refund'))) await s.h.elapse(10);
    const decision = { approved: true };
    await s.h.store.decideWait({
      runId: 'a1',
      kind: 'approval',
      name: 'refund',
      decisionJson: JSON.stringify(decision),
      decidedBy: 'alice (operator)',
    });
    await s.until('a1', 'failed');

    await s.retry('a1:pay');
    await s.until('a1:pay', 'completed');
    expect(await s.details('a1')).toContain(
      'child a1:pay completed again; this run keeps its earlier end (failed), which it acted on',
    );
    await s.retry('a1');
    await s.until('a1', 'completed');
    expect(JSON.parse((await s.h.store.getRun('a1'))!.outputJson!)).toBe('failed');
    expect(await s.h.store.getWait('a1', 'approval', 'ship')).toBeNull();
  });

  it('a parent cancelled with its child waits for the retried child when retried itself, and takes its end', async (t) => {
    const s = await setup();
    if (!s) return t.skip();
    await s.start('holder', 'k1');
    await s.until('k1:h', 'waiting');
    await s.until('k1', 'waiting');
    await s.h.store.actOnRun('k1', 'cancel', 'alice (operator)');
    expect((await s.h.store.getRun('k1:h'))?.status).toBe('cancelled');

    await s.retry('k1:h');
    await s.until('k1:h', 'waiting');
    await s.retry('k1');
    // Parked on the child's next end, not failed on the cancel it was told of.
    await s.until('k1', 'waiting');
    expect((await s.h.store.getWait('k1', 'child', 'k1:h#2'))?.decidedAt).toBeNull();
    await s.h.store.decideWait({ runId: 'k1:h', kind: 'signal', name: 'go', decisionJson: '{}', decidedBy: 'test' });
    await s.until('k1', 'completed');
    expect(JSON.parse((await s.h.store.getRun('k1'))!.outputJson!)).toBe('went');
  });

  it('a step the parent committed after its child failed, before it looked, is not acting on that end', async (t) => {
    const s = await setup();
    if (!s) return t.skip();
    failOnce.add('w1:pay');
    await s.start('work-first', 'w1');
    await s.until('w1', 'failed');
    const wait = await s.h.store.getWait('w1', 'child', 'w1:pay');
    const work = await s.h.store.getCommitted('w1:own-work');
    expect(work!.committedAt).toBeGreaterThanOrEqual(wait!.decidedAt!);

    await s.retry('w1:pay');
    await s.until('w1:pay', 'completed');
    await s.retry('w1');
    await s.until('w1', 'completed');
    expect(JSON.parse((await s.h.store.getRun('w1'))!.outputJson!)).toBe(30);
    expect(effects.get('w1:own-work')).toBe(1);
  });
});
