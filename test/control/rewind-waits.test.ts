/**
 * A fork keeps the decisions its copied history read (lib/store/shared/rewind.ts copyWaits), on both backends: a
 * fork from after an approval and a signal finds them decided as its original did and asks no one again; a fork
 * from before them asks again. A worker in the test's process, on the store's clock, which the test moves between
 * the decisions so that each falls between two steps' commits (SQLite's clock stands still unless moved).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { type Caller, type ControlDeps, rewind, waits } from '../../lib/control';
import { WorkflowCatalog } from '../../lib/engine/catalog';
import { startRun } from '../../lib/engine/runs';
import { defineWorkflow, WorkflowRegistry } from '../../lib/engine/workflow';
import type { RunStatus, WaitRow } from '../../lib/store/contract';
import { untilRun } from '../support/backends';
import { servedStores } from '../support/served-stores';

const OPERATOR: Caller = { actor: 'olga (operator)', role: 'operator', channel: 'api' };
const effects: string[] = [];

/** Step 0 (a), an approval, a signal, step 1 (b: what the two decided), step 2 (c). */
const review = defineWorkflow({
  name: 'review',
  input: z.object({}),
  totalSteps: 3,
  async run(ctx) {
    await ctx.step('a', () => effects.push(`${ctx.runId} a`), { step: 0 });
    const approval = await ctx.waitForApproval('ship', { details: { draft: 'hello' } });
    const settled = await ctx.waitForSignal<{ id: string }>('settled');
    const { result } = await ctx.step(
      'b',
      () => {
        effects.push(`${ctx.runId} b`);
        return { approvedBy: approval.by, note: approval.note, at: approval.at, settled: settled };
      },
      { step: 1 },
    );
    await ctx.step('c', () => effects.push(`${ctx.runId} c`), { step: 2 });
    return result;
  },
});
const registry = new WorkflowRegistry([review]);

// Above servedStores(), so that it runs once the workers have stopped: see there.
afterEach(() => {
  effects.length = 0;
});
const stores = servedStores();

describe.each([['sqlite'], ['postgres']] as const)('forking a run around its decided waits on %s', (name) => {
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
    const stepB = async (id: string) =>
      (await h.store.listCommitted(id, { limit: 10 })).find((row) => row.step === 1)?.resultJson;
    /** A run's waits without the run's id, to compare a fork's with its original's. */
    const waitsOf = async (id: string) => (await h.store.listWaits(id)).map(({ runId: _, ...rest }) => rest);
    return { h, deps, until, output, stepB, waitsOf };
  }

  /** Runs P to the end: approved, then signalled, the store's clock moved before each decision. */
  async function original(s: NonNullable<Awaited<ReturnType<typeof setup>>>) {
    await startRun(s.h.store, registry, { workflow: 'review', input: {}, id: 'P' });
    await s.until('P', 'waiting');
    await s.h.elapse(1000);
    await waits.decide(s.deps, OPERATOR, { runId: 'P', name: 'ship', approve: true, note: 'looks right' });
    await s.until('P', 'waiting');
    await s.h.elapse(1000);
    await waits.signal(s.deps, OPERATOR, { runId: 'P', name: 'settled', payload: { id: 'evt_1' } });
    await s.until('P', 'completed');
    expect(effects).toEqual(['P a', 'P b', 'P c']);
    effects.length = 0;
  }

  it('a fork from after the approval and the signal finds both decided and asks no one again', async (t) => {
    const s = await setup();
    if (!s) return t.skip();
    await original(s);
    const decided: Omit<WaitRow, 'runId'>[] = await s.waitsOf('P');
    expect(decided.map((w) => [w.kind, w.name, w.decidedBy, w.note, w.decisionJson])).toEqual([
      ['approval', 'ship', 'olga (operator)', 'looks right', '{"approved":true}'],
      ['signal', 'settled', 'olga (operator)', null, '{"payload":{"id":"evt_1"}}'],
    ]);

    // From step 2: step b is copied, and so are the two decisions it read.
    const fromC = await rewind.fork(s.deps, OPERATOR, { runId: 'P', fromStep: 2, id: 'FC' });
    expect(fromC.moved).toBe(2);
    await s.until('FC', 'completed');
    expect(effects).toEqual(['FC c']);
    expect(await s.stepB('FC')).toBe(await s.stepB('P'));
    expect(await s.output('FC')).toEqual(await s.output('P'));
    expect(await s.waitsOf('FC')).toEqual(decided);

    // From step 1: step b runs again, and reads the same decisions: its output is the original's.
    effects.length = 0;
    await rewind.fork(s.deps, OPERATOR, { runId: 'P', fromStep: 1, id: 'FB' });
    await s.until('FB', 'completed');
    expect(effects).toEqual(['FB b', 'FB c']);
    expect(await s.stepB('FB')).toBe(await s.stepB('P'));
    expect(await s.waitsOf('FB')).toEqual(decided);

    // Each decision was audited once, on the original; the forks' are copies, not decisions.
    const audit = (id: string) => s.h.store.listAudit({ runId: id });
    expect((await audit('P')).map((a) => a.action)).toEqual(['fork', 'fork', 'signal', 'approve']);
    expect([(await audit('FC')).length, (await audit('FB')).length]).toEqual([0, 0]);
    expect((await s.h.store.listEvents('FC')).map((e) => e.detail)).toContain(
      'forked from run P at step 2 by olga (operator): 2 results copied; 2 decided waits copied',
    );
  });

  it('a fork from before the approval asks for it again, and copies no decision', async (t) => {
    const s = await setup();
    if (!s) return t.skip();
    await original(s);

    await rewind.fork(s.deps, OPERATOR, { runId: 'P', fromStep: 0, id: 'FA' });
    await s.until('FA', 'waiting');
    expect(effects).toEqual(['FA a']);
    const asked = await s.h.store.listWaits('FA');
    expect(asked.map((w) => [w.kind, w.name, w.decidedAt])).toEqual([['approval', 'ship', null]]);
    expect((await s.h.store.listWaits('P')).length).toBe(2);

    await s.h.elapse(1000);
    await waits.decide(s.deps, OPERATOR, { runId: 'FA', name: 'ship', approve: true, note: 'again' });
    await s.until('FA', 'waiting');
    expect((await s.h.store.listWaits('FA')).map((w) => [w.kind, w.name, w.decidedAt === null])).toEqual([
      ['approval', 'ship', false],
      ['signal', 'settled', true],
    ]);
    const audit = (id: string) => s.h.store.listAudit({ runId: id });
    expect((await audit('P')).map((a) => a.action)).toEqual(['fork', 'signal', 'approve']);
    expect((await audit('FA')).map((a) => a.action)).toEqual(['approve']);
  });
});
