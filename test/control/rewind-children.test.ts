/**
 * Rerun and fork of a parent, around its child's start (lib/control/rewind.ts over lib/store/shared/rewind.ts), on
 * both backends. A step without a number, a child's start among them, stands where it ran: a rerun from before
 * it lets the old child go and starts a new one with the (edited) input, a fork from after it keeps the child,
 * ended or not, and never starts it again. A rerun that would leave a running child without its parent is refused.
 * A worker in the test's process, on the store's clock.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { type Caller, type ControlDeps, runs } from '../../lib/control';
import { WorkflowCatalog } from '../../lib/engine/catalog';
import { startRun } from '../../lib/engine/runs';
import { defineWorkflow, WorkflowRegistry } from '../../lib/engine/workflow';
import { RewindRefusedError } from '../../lib/errors';
import type { RunStatus } from '../../lib/store/contract';
import { untilRun } from '../support/backends';
import { servedStores } from '../support/served-stores';

const OPERATOR: Caller = { actor: 'olga (operator)', role: 'operator', channel: 'api' };
const effects: string[] = [];

const kid = defineWorkflow({
  name: 'kid',
  input: z.object({ x: z.number() }),
  async run(ctx, input) {
    const { result } = await ctx.step('charge', () => {
      effects.push(`${ctx.runId} charge x=${input.x}`);
      return input.x * 100;
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
/** Step 0, a step without a number, the child's start (none either), the wait, step 1. */
const parent = defineWorkflow({
  name: 'parent',
  input: z.object({ x: z.number(), child: z.enum(['kid', 'hold']).default('kid') }),
  // Declared, so that step 1 can be forked from while the run waits before it.
  totalSteps: 2,
  async run(ctx, input) {
    await ctx.step('prep', () => effects.push(`${ctx.runId} prep`), { step: 0 });
    await ctx.step('fetch', () => effects.push(`${ctx.runId} fetch x=${input.x}`));
    const id = await ctx.startChild('c', input.child, input.child === 'kid' ? { x: input.x } : {});
    const out = await ctx.waitForChild(id);
    const { result } = await ctx.step(
      'after',
      () => {
        effects.push(`${ctx.runId} after out=${out}`);
        return out;
      },
      { step: 1 },
    );
    return result;
  },
});
const registry = new WorkflowRegistry([kid, hold, parent]);

// Above servedStores(), so that it runs once the workers have stopped: see there.
afterEach(() => {
  effects.length = 0;
});
const stores = servedStores();

describe.each([['sqlite'], ['postgres']] as const)('rewinding a parent around its child on %s', (name) => {
  async function setup() {
    const h = await stores.open(name);
    if (!h) return null;
    stores.serve(h, registry, { concurrency: 2 });
    const deps: ControlDeps = {
      store: async () => h.store,
      claimTtlMs: 30_000,
      maxBytes: 1 << 20,
      workflows: (store) => WorkflowCatalog.load(store, registry),
    };
    const until = (id: string, want: RunStatus) => untilRun(h, id, want);
    const output = async (id: string) => JSON.parse((await h.store.getRun(id))!.outputJson!);
    return { h, deps, until, output };
  }

  it('a fork from after the child’s start keeps the child and its answer: nothing before step 1 runs again', async (t) => {
    const s = await setup();
    if (!s) return t.skip();
    await startRun(s.h.store, registry, { workflow: 'parent', input: { x: 1 }, id: 'P' });
    await s.until('P', 'completed');
    effects.length = 0;

    const forked = await runs.fork(s.deps, OPERATOR, { runId: 'P', fromStep: 1, id: 'F' });
    expect([forked.moved, forked.children]).toEqual([3, ['P:c']]);
    await s.until('F', 'completed');
    expect(await s.output('F')).toBe(100);
    expect(effects).toEqual(['F after out=100']);
    expect(await s.h.store.getRun('F:c')).toBeNull();
    expect((await s.h.store.getWait('F', 'child', 'P:c'))?.decidedBy).toBe('child run');
  });

  it('a rerun from before the child’s start with an edited input lets the old child go and starts a new one', async (t) => {
    const s = await setup();
    if (!s) return t.skip();
    await startRun(s.h.store, registry, { workflow: 'parent', input: { x: 1 }, id: 'P' });
    await s.until('P', 'completed');
    effects.length = 0;

    const rerun = await runs.rerun(s.deps, OPERATOR, { runId: 'P', fromStep: 0, input: { x: 2 } });
    expect([rerun.moved, rerun.children]).toEqual([4, ['P:c']]);
    await s.until('P', 'completed');
    expect(await s.output('P')).toBe(200);
    expect(effects).toEqual(['P prep', 'P fetch x=2', 'P:c.r2 charge x=2', 'P after out=200']);
    const [old, fresh] = [await s.h.store.getRun('P:c'), await s.h.store.getRun('P:c.r2')];
    expect([old?.parentRunId, old?.detached, old?.outputJson]).toEqual([null, true, '100']);
    expect([fresh?.parentRunId, fresh?.detached]).toEqual(['P', false]);
    expect((await s.h.store.listEvents('P:c')).map((e) => e.detail)).toContain(
      'let go by rerun 1 of its parent P (child:c moved to history): the rerun starts a child of its own',
    );
  });

  it('a rerun from before a child still running is refused naming its step, and changes nothing', async (t) => {
    const s = await setup();
    if (!s) return t.skip();
    await startRun(s.h.store, registry, { workflow: 'parent', input: { x: 1, child: 'hold' }, id: 'Q' });
    await s.until('Q:c', 'waiting');
    await s.until('Q', 'waiting');
    await s.h.store.actOnRun('Q', 'pause', 'olga (operator)');
    const before = await s.h.store.listCommitted('Q', { limit: 10 });

    const refused = runs.rerun(s.deps, OPERATOR, { runId: 'Q', fromStep: 0 });
    await expect(refused).rejects.toBeInstanceOf(RewindRefusedError);
    await expect(refused).rejects.toMatchObject({ code: 'CONFLICT' });
    await expect(refused).rejects.toThrow(/step child:c started run Q:c, which is waiting/);
    expect(await s.h.store.listCommitted('Q', { limit: 10 })).toEqual(before);
    expect([(await s.h.store.getRun('Q'))?.status, (await s.h.store.getRun('Q:c'))?.parentRunId]).toEqual([
      'paused',
      'Q',
    ]);
  });

  it('a fork from after the start of a child still running waits for it, as its original does', async (t) => {
    const s = await setup();
    if (!s) return t.skip();
    await startRun(s.h.store, registry, { workflow: 'parent', input: { x: 1, child: 'hold' }, id: 'R' });
    await s.until('R:c', 'waiting');
    await s.until('R', 'waiting');

    await runs.fork(s.deps, OPERATOR, { runId: 'R', fromStep: 1, id: 'G' });
    await s.until('G', 'waiting');
    await s.h.store.decideWait({ runId: 'R:c', kind: 'signal', name: 'go', decisionJson: '{}', decidedBy: 'test' });
    await s.until('R', 'completed');
    await s.until('G', 'completed');
    expect([await s.output('R'), await s.output('G')]).toEqual(['went', 'went']);
    expect(await s.h.store.getRun('G:c')).toBeNull();
    expect(effects.filter((e) => e.startsWith('G '))).toEqual(['G after out=went']);
  });
});
