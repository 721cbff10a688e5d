/**
 * One definition per figure (lib/control/figures.ts), on every backend, for each shape a run takes: a stepped
 * loop that saves its map, named steps (ctx.step) that save none, a run parked at an approval, a rerun, and an
 * outside client's run (rows with no runs row). The runs list (listRuns), the API's list and run views and the
 * run page's chart read agree: a completed run is 100%, executed counts the current execution's executed steps.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { getRun, listRuns, type RunsStore } from '../../lib/api/runs';
import { Checkpoint } from '../../lib/checkpoint/checkpoint';
import { type Caller, type ControlDeps, rewind, waits } from '../../lib/control';
import { type RunFigures, runFigures } from '../../lib/control/figures';
import { Worker } from '../../lib/engine/worker';
import { defineWorkflow, WorkflowRegistry } from '../../lib/engine/workflow';
import { backends, type StoreHandle, untilRun } from '../support/backends';

const list = await backends();
const TTL = 30_000;
const OPERATOR: Caller = { actor: 'olga (operator)', role: 'operator', channel: 'api' };

/** A loop that saves its map after each step, as agent-batch does. */
const stepped = defineWorkflow({
  name: 'stepped',
  input: z.object({ steps: z.number() }),
  totalSteps: (i) => i.steps,
  async run(ctx, input) {
    const { step: start } = await ctx.load();
    for (let n = start; n < input.steps; n++) {
      await ctx.runOnce(`${ctx.runId}:step:${n}`, () => n, { step: n });
      await ctx.saveProgress(n + 1, { n });
    }
  },
});

/** review-and-send's shape: a named step, an approval, a named step; no map saved. */
const named = defineWorkflow({
  name: 'named',
  input: z.object({}),
  totalSteps: 2,
  async run(ctx) {
    await ctx.step('draft', () => 'hello');
    await ctx.waitForApproval('review');
    await ctx.step('send', () => 'sent');
  },
});

const registry = new WorkflowRegistry([stepped, named]);

describe.each(list)('run figures on $name', (backend) => {
  let h: StoreHandle;
  let store: RunsStore;
  let worker: Worker;
  let running: Promise<void>;
  let deps: ControlDeps;

  beforeEach(async () => {
    h = await backend.open();
    store = h.store as RunsStore;
    worker = new Worker({ store, registry, pollMs: 10, heartbeatMs: 50, clock: h.clock });
    running = worker.run();
    deps = { store: async () => store, claimTtlMs: TTL, maxBytes: 100_000, workflows: async () => registry };
  });
  afterEach(async () => {
    worker.stop();
    await h.settle(running);
    await h.close();
  });

  /** The run's figures as the list, the API's list, the API's run view and the page's chart read each give them. */
  async function figures(id: string): Promise<RunFigures> {
    const row = (await store.listRuns({ search: id, claimTtlMs: TTL })).find((r) => r.id === id)!;
    const listed = runFigures(row);
    const api = (await listRuns(store, { q: id }, TTL)).runs.find((r) => r.id === id)!.figures;
    const one = (await getRun(store, id, TTL)).figures;
    const chart = (await store.commitBuckets(id, { buckets: 400 })).reduce((n, b) => n + b.executed, 0);
    expect(api).toEqual(listed);
    expect(one).toEqual(listed);
    expect(chart).toBe(listed.executed);
    return listed;
  }

  it('a stepped run: done follows its map, and completed is 30/30, 100%', async () => {
    await store.createRun({ id: 's', workflow: 'stepped', inputJson: '{"steps":30}', totalSteps: 30 });
    await untilRun(h, 's', 'completed');
    expect(await figures('s')).toEqual({
      done: 30,
      total: 30,
      percent: 100,
      committed: 30,
      executed: 30,
      skipped: 0,
      awaited: 0,
    });
  });

  it('named steps with a wait: 1/2 at the approval, 2/2 and 100% once completed', async () => {
    await store.createRun({ id: 'n', workflow: 'named', inputJson: '{}', totalSteps: 2 });
    await untilRun(h, 'n', 'waiting');
    expect(await figures('n')).toEqual({
      done: 1,
      total: 2,
      percent: 50,
      committed: 1,
      executed: 1,
      skipped: 0,
      awaited: 0,
    });
    await waits.decide(deps, OPERATOR, { runId: 'n', approve: true });
    await untilRun(h, 'n', 'completed');
    expect(await figures('n')).toEqual({
      done: 2,
      total: 2,
      percent: 100,
      committed: 2,
      executed: 2,
      skipped: 0,
      awaited: 0,
    });
  });

  it('a 30-step run rerun from 20: executed is 30 (the current execution), not 40', async () => {
    await store.createRun({ id: 'r', workflow: 'stepped', inputJson: '{"steps":30}', totalSteps: 30 });
    await untilRun(h, 'r', 'completed');
    // No worker while the rerun is looked at: it would take the run at once.
    worker.stop();
    await h.settle(running);
    await rewind.rerun(deps, OPERATOR, { runId: 'r', fromStep: 20 });
    expect(await figures('r')).toMatchObject({ done: 20, total: 30, percent: 66, committed: 20, executed: 20 });
    worker = new Worker({ store, registry, pollMs: 10, heartbeatMs: 50, clock: h.clock });
    running = worker.run();
    await untilRun(h, 'r', 'completed', 2);
    expect(await figures('r')).toMatchObject({ done: 30, total: 30, percent: 100, committed: 30, executed: 30 });
    // The progress row's counter adds every execution's: it is not the figure.
    expect((await store.loadProgress('r'))!.executed).toBe(40);
  });

  it("an outside client's run (no runs row): its map and its commits, no total and so no percent", async () => {
    const ckpt = new Checkpoint(store, 'outside', { clock: h.clock });
    for (let n = 0; n < 5; n++) {
      await ckpt.runOnce(`outside:step:${n}`, () => n, { step: n });
      await ckpt.saveProgress(n + 1, { n });
    }
    // A replay of step 0 (a restarted client): skipped, and counted with its next progress write.
    await ckpt.runOnce('outside:step:0', () => 0, { step: 0 });
    await ckpt.saveProgress(5, { n: 4 });
    expect(await store.getRun('outside')).toBeNull();
    expect(await figures('outside')).toEqual({
      done: 5,
      total: null,
      percent: null,
      committed: 5,
      executed: 5,
      skipped: 1,
      awaited: 0,
    });
  });
});
