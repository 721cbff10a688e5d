/**
 * A rerun's preview names the child runs the rerun would let go (lib/control/rewind.ts `rerunPreview`, over the
 * rerun's own rule in lib/store/shared/rewind.ts), on both backends: a parent that started two children before
 * step 1 and one after it. The preview from step 1 lists the one after, and the rerun then lets go exactly that
 * one (detached, no parent) and keeps the two before; the preview itself writes nothing and is a viewer's read.
 * A child still running is refused by the preview as the rerun refuses it. A worker in the test's process.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { type Caller, type ControlDeps, rewind } from '../../lib/control';
import { letGoView, rerunPreviewView } from '../../lib/control/views';
import { WorkflowCatalog } from '../../lib/engine/catalog';
import { startRun } from '../../lib/engine/runs';
import { defineWorkflow, WorkflowRegistry } from '../../lib/engine/workflow';
import { RewindRefusedError } from '../../lib/errors';
import type { RunStatus } from '../../lib/store/contract';
import { untilRun } from '../support/backends';
import { servedStores } from '../support/served-stores';

const OPERATOR: Caller = { actor: 'olga (operator)', role: 'operator', channel: 'api' };
const VIEWER: Caller = { actor: 'vera (viewer)', role: 'viewer', channel: 'api' };

const kid = defineWorkflow({
  name: 'kid',
  input: z.object({ x: z.number() }),
  async run(ctx, input) {
    const { result } = await ctx.step('charge', () => input.x * 100);
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
/** Step 0, children a and b, step 1, child c, step 2: two children started before step 1 and one after it. */
const brood = defineWorkflow({
  name: 'brood',
  input: z.object({ last: z.enum(['kid', 'hold']).default('kid') }),
  totalSteps: 3,
  async run(ctx, input) {
    await ctx.step('prep', () => 'prep', { step: 0 });
    const a = await ctx.startChild('a', 'kid', { x: 1 });
    const b = await ctx.startChild('b', 'kid', { x: 2 });
    const early = Number(await ctx.waitForChild(a)) + Number(await ctx.waitForChild(b));
    await ctx.step('middle', () => early, { step: 1 });
    const c = await ctx.startChild('c', input.last, input.last === 'kid' ? { x: 3 } : {});
    const late = String(await ctx.waitForChild(c));
    const { result } = await ctx.step('last', () => `${early}+${late}`, { step: 2 });
    return result;
  },
});
const registry = new WorkflowRegistry([kid, hold, brood]);

const stores = servedStores();

it('names the first ten children in its sentence and counts the rest, and lists every one', () => {
  const many = Array.from({ length: 12 }, (_, i) => ({
    step: `child:${i}`,
    runId: `F:${i}`,
    workflow: 'kid',
    status: 'completed' as const,
  }));
  const view = letGoView(many);
  expect([view.count, view.children.length]).toEqual([12, 12]);
  expect(view.text).toMatch(/^lets go 12 child runs: F:0 \(kid, completed\), .*, F:9 \(kid, completed\), and 2 more$/);
});

describe.each([['sqlite'], ['postgres']] as const)('a rerun preview of a parent with children on %s', (name) => {
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
    return { h, deps, until };
  }

  it('lists the children started from step N on, and the rerun lets go exactly those', async (t) => {
    const s = await setup();
    if (!s) return t.skip();
    await startRun(s.h.store, registry, { workflow: 'brood', input: {}, id: 'B' });
    await s.until('B', 'completed');
    const family = ['B:a', 'B:b', 'B:c'];
    const rows = async () => Promise.all(family.map(async (id) => (await s.h.store.getRun(id))!));
    const before = await rows();

    const all = await rewind.rerunPreview(s.deps, VIEWER, { runId: 'B', fromStep: 0 });
    expect(all.letGo.map((c) => c.runId)).toEqual(family);
    expect((await rewind.rerunPreview(s.deps, VIEWER, { runId: 'B', fromStep: 2 })).letGo).toEqual([]);
    const preview = await rewind.rerunPreview(s.deps, VIEWER, { runId: 'B', fromStep: 1 });
    expect(preview.letGo).toEqual([{ step: 'child:c', runId: 'B:c', workflow: 'kid', status: 'completed' }]);
    expect(preview.lastCost).toMatchObject({ fromStep: 1, toStep: 2, calls: 0 });
    expect(rerunPreviewView(preview).letGo).toEqual({
      count: 1,
      children: [{ runId: 'B:c', workflow: 'kid', status: 'completed', step: 'child:c' }],
      text: 'lets go 1 child run: B:c (kid, completed)',
    });
    expect(rerunPreviewView(all).letGo.text).toBe(
      'lets go 3 child runs: B:a (kid, completed), B:b (kid, completed), B:c (kid, completed)',
    );
    expect(await rows()).toEqual(before);

    const rerun = await rewind.rerun(s.deps, OPERATOR, { runId: 'B', fromStep: 1 });
    expect(rerun.children).toEqual(preview.letGo.map((c) => c.runId));
    const after = await rows();
    const letGo = after.filter((r) => r.parentRunId === null && r.detached).map((r) => r.id);
    expect(letGo).toEqual(preview.letGo.map((c) => c.runId));
    expect(after.filter((r) => r.parentRunId === 'B' && !r.detached).map((r) => r.id)).toEqual(['B:a', 'B:b']);
    await s.until('B', 'completed');
    // The rerun started a child of its own for c; a and b stay B's, their answers read again.
    expect((await s.h.store.getRun('B:c.r2'))?.parentRunId).toBe('B');
  });

  it('refuses, as the rerun does, a preview from before a child still running', async (t) => {
    const s = await setup();
    if (!s) return t.skip();
    await startRun(s.h.store, registry, { workflow: 'brood', input: { last: 'hold' }, id: 'H' });
    await s.until('H:c', 'waiting');
    await s.until('H', 'waiting');
    await s.h.store.actOnRun('H', 'pause', 'olga (operator)');

    const preview = rewind.rerunPreview(s.deps, VIEWER, { runId: 'H', fromStep: 1 });
    await expect(preview).rejects.toBeInstanceOf(RewindRefusedError);
    await expect(preview).rejects.toThrow(/step child:c started run H:c, which is waiting/);
    await expect(rewind.rerun(s.deps, OPERATOR, { runId: 'H', fromStep: 1 })).rejects.toThrow(
      /step child:c started run H:c, which is waiting/,
    );
    // From step 2, after c's start, there is nothing to let go.
    expect((await rewind.rerunPreview(s.deps, VIEWER, { runId: 'H', fromStep: 2 })).letGo).toEqual([]);
  });
});
