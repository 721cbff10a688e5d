/**
 * A rerun restores the run's saved state as it was when the step was first reached, not the latest, on every
 * backend: a 30-step run rerun from step 20 ends with exactly the state (and the output) of a fresh run that
 * got the same results for steps 0–19 and the new ones for 20–29. Shown for the three ways a loop keeps
 * state in progress: a workflow run by a real Worker that saves its own state (ctx.load/ctx.saveProgress), one
 * built on runAgent (its `processed` count, written in each commit), and a library loop of the article's shape
 * (Checkpoint.load, runOnce, saveProgress) — and with an edited input, which the steps from 20 on use. Side
 * effects are counted per key: 0–19 once in all, 20–29 twice.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { runAgent } from '../../lib/checkpoint/agent';
import { Checkpoint } from '../../lib/checkpoint/checkpoint';
import { type Caller, type ControlDeps, rewind } from '../../lib/control';
import { Worker } from '../../lib/engine/worker';
import { defineWorkflow, WorkflowRegistry } from '../../lib/engine/workflow';
import type { RunStore, Store } from '../../lib/store/contract';
import { PRIOR_STATE_MAX_CHARS } from '../../lib/store/shared/columns';
import { backends, type StoreHandle, untilRun } from '../support/backends';

const list = await backends();
const OPERATOR: Caller = { actor: 'olga (operator)', role: 'operator', channel: 'api' };
const calls = new Map<string, number>();
const count = (key: string) => calls.set(key, (calls.get(key) ?? 0) + 1).get(key)!;
const items = z.strictObject({ items: z.array(z.number()).min(1) });
type State = { sum?: number; seen?: number; last?: number | null };

/** Saves its own state after each step: the sum of the results, how many steps it has seen, the last one. */
const summing = defineWorkflow({
  name: 'summing',
  input: items,
  totalSteps: (i) => i.items.length,
  async run(ctx, input) {
    const { step: start, state } = await ctx.load<State>();
    let { sum = 0, seen = 0 } = state;
    for (let n = start; n < input.items.length; n++) {
      const { result } = await ctx.runOnce(
        `${ctx.runId}:step:${n}`,
        () => {
          count(`${ctx.runId}:step:${n}`);
          return input.items[n]! * 10;
        },
        { step: n },
      );
      sum += result;
      seen++;
      await ctx.saveProgress(n + 1, { sum, seen, last: result });
    }
    return { sum, seen };
  },
});

/** runAgent's loop: its `processed` count is written in each step's commit. */
const agentish = defineWorkflow({
  name: 'agentish',
  input: items,
  totalSteps: (i) => i.items.length,
  async run(ctx, input) {
    return runAgent(input.items, ctx, (item, step) => {
      count(step.idempotencyKey);
      return item * 10;
    });
  },
});

const registry = new WorkflowRegistry([summing, agentish]);
const first = Array.from({ length: 30 }, (_, n) => n + 1);
/** The input a rerun from 20 is edited to: the same items before 20, others from 20 on. */
const edited = first.map((x, n) => (n < 20 ? x : x + 1000));

describe.each(list)('rerun restores the state of step N on $name', (backend) => {
  let h: StoreHandle;
  let store: Store & RunStore;
  let worker: Worker;
  let running: Promise<void>;
  let deps: ControlDeps;

  beforeEach(async () => {
    h = await backend.open();
    store = h.store as Store & RunStore;
    calls.clear();
    worker = new Worker({ store, registry, pollMs: 10, heartbeatMs: 50, clock: h.clock });
    running = worker.run();
    deps = {
      store: async () => store,
      claimTtlMs: 30_000,
      maxBytes: 100_000,
      workflows: async () => registry,
    };
  });
  afterEach(async () => {
    worker.stop();
    await h.settle(running);
    await h.close();
  });

  const final = async (id: string) => ({
    state: JSON.parse((await store.loadProgress(id))!.stateJson),
    step: (await store.loadProgress(id))!.step,
    output: JSON.parse((await store.getRun(id))!.outputJson!),
  });
  const executions = (id: string) => Array.from({ length: 30 }, (_, n) => calls.get(`${id}:step:${n}`) ?? 0);

  it.each([
    ['summing', { sum: 4650, seen: 30 }],
    ['agentish', { processed: 30, executed: 10, skipped: 0, awaited: 0 }],
  ] as const)('a %s run rerun from 20 ends as a fresh run with the same results would', async (workflow, output) => {
    // The fresh run's results for 20–29 are the rerun's new ones: the same inputs, so the same results here.
    await store.createRun({ id: 'fresh', workflow, inputJson: JSON.stringify({ items: first }), totalSteps: 30 });
    await store.createRun({ id: 'r', workflow, inputJson: JSON.stringify({ items: first }), totalSteps: 30 });
    await untilRun(h, 'fresh', 'completed');
    await untilRun(h, 'r', 'completed');
    const outcome = await rewind.rerun(deps, OPERATOR, { runId: 'r', fromStep: 20, reason: 'redo the tail' });
    expect([outcome.moved, outcome.state, outcome.stateStep]).toEqual([10, 'restored', 20]);
    await untilRun(h, 'r', 'completed', 2);

    expect(executions('r')).toEqual(Array.from({ length: 30 }, (_, n) => (n < 20 ? 1 : 2)));
    const fresh = await final('fresh');
    expect(await final('r')).toEqual({
      ...fresh,
      // The rerun's own call executed 10 steps; the fresh run's, 30. The state itself is the same.
      output: workflow === 'agentish' ? output : fresh.output,
    });
    expect(fresh.state).toEqual(workflow === 'summing' ? { sum: 4650, seen: 30, last: 300 } : { processed: 30 });
    // What the step page shows of step 20: the state it was reached with, which a rerun from it put back.
    const step20 = (await store.readStep('r', 20)).committed!;
    expect([step20.priorStep, JSON.parse(step20.priorStateJson!)]).toEqual([
      20,
      workflow === 'summing' ? { sum: 2100, seen: 20, last: 200 } : { processed: 20 },
    ]);
  });

  it('a rerun from 20 with an edited input uses it, and ends as a fresh run of the edited input', async () => {
    await store.createRun({
      id: 'e',
      workflow: 'summing',
      inputJson: JSON.stringify({ items: first }),
      totalSteps: 30,
    });
    await store.createRun({
      id: 'fresh-edited',
      workflow: 'summing',
      inputJson: JSON.stringify({ items: edited }),
      totalSteps: 30,
    });
    await untilRun(h, 'e', 'completed');
    await untilRun(h, 'fresh-edited', 'completed');
    await rewind.rerun(deps, OPERATOR, { runId: 'e', fromStep: 20, input: { items: edited } });
    await untilRun(h, 'e', 'completed', 2);
    expect(executions('e')).toEqual(Array.from({ length: 30 }, (_, n) => (n < 20 ? 1 : 2)));
    const results = await Promise.all(
      Array.from({ length: 30 }, async (_, n) => JSON.parse((await store.getCommitted(`e:step:${n}`))!.resultJson)),
    );
    expect(results).toEqual(edited.map((x) => x * 10));
    // 10 × (1 + … + 20) + 10 × (1021 + … + 1030): the first 20 results as before, the rest from the edited items.
    expect(await final('e')).toEqual(await final('fresh-edited'));
    expect((await final('e')).state).toEqual({ sum: 2100 + 102_550, seen: 30, last: 10_300 });
  });

  it('a fork from step 10 starts from the state step 10 was reached with, and ends as a fresh run', async () => {
    await store.createRun({
      id: 'o',
      workflow: 'summing',
      inputJson: JSON.stringify({ items: first }),
      totalSteps: 30,
      tags: ['nightly'],
      metadata: { customer: 'acme' },
    });
    await untilRun(h, 'o', 'completed');
    const outcome = await rewind.fork(deps, OPERATOR, { runId: 'o', fromStep: 10, id: 'o-fork' });
    expect([outcome.moved, outcome.state, outcome.stateStep]).toEqual([10, 'restored', 10]);
    // The fork carries the original's tags and metadata; the original keeps its own.
    expect(await store.getRunTags('o-fork')).toEqual({ tags: ['nightly'], metadata: { customer: 'acme' } });
    expect(await store.getRunTags('o')).toEqual({ tags: ['nightly'], metadata: { customer: 'acme' } });
    await untilRun(h, 'o-fork', 'completed');
    // Its first step found the map the fork restored (read from that step's row: a worker takes the fork at once,
    // so the live map may have moved on before any read of it).
    expect(await store.getCommitted('o-fork:step:10')).toMatchObject({
      priorStep: 10,
      priorStateJson: JSON.stringify({ sum: 550, seen: 10, last: 100 }),
    });
    expect(executions('o-fork')).toEqual(Array.from({ length: 30 }, (_, n) => (n < 10 ? 0 : 1)));
    expect(await final('o-fork')).toEqual(await final('o'));
  });

  it('each commit records the map as it stood; a lagging map resumes at its own step, a state too long to copy is kept', async () => {
    const ckpt = new Checkpoint(store, 'p', { clock: h.clock });
    const step = (n: number, progress?: { step: number; state: unknown }) =>
      ckpt.runOnce(`p:step:${n}`, () => n, { step: n, progress });
    await step(0);
    await ckpt.saveProgress(1, { a: 1 });
    await step(1);
    // runAgent's way: the progress rides with the commit, and the row keeps the map from before it.
    await step(2, { step: 3, state: { a: 2 } });
    await ckpt.saveProgress(3, { a: 3, pad: 'x'.repeat(PRIOR_STATE_MAX_CHARS) });
    await step(3);
    await ckpt.saveProgress(4, { a: 4 });
    const prior = async (n: number) => {
      const row = (await store.getCommitted(`p:step:${n}`))!;
      return [row.priorStep, row.priorStateJson];
    };
    // No progress row yet is the state a fresh run loads: step 0, {}.
    expect(await Promise.all([0, 1, 2, 3].map(prior))).toEqual([
      [0, '{}'],
      [1, '{"a":1}'],
      [1, '{"a":1}'],
      [null, null],
    ]);

    // A workflow no worker here serves: the rerun queues the run, and nothing runs it between the two reruns.
    const now = await h.now();
    await h.exec(`INSERT INTO runs (id, workflow, input_json, status, total_steps, attempts, created_at, updated_at)
      VALUES ('p', 'by-hand', '{}', 'completed', 4, 1, ${now}, ${now})`);
    const kept = await rewind.rerun(deps, OPERATOR, { runId: 'p', fromStep: 3 });
    expect([kept.moved, kept.state, kept.stateStep]).toEqual([1, 'kept', null]);
    expect(await store.loadProgress('p')).toMatchObject({ step: 3, stateJson: '{"a":4}' });
    await h.exec(`UPDATE runs SET status = 'completed' WHERE id = 'p'`);
    // Step 2's map lagged at step 1: the rerun resumes there (step 1 is committed, so it is skipped), state with it.
    const lagged = await rewind.rerun(deps, OPERATOR, { runId: 'p', fromStep: 2 });
    expect([lagged.moved, lagged.state, lagged.stateStep]).toEqual([1, 'restored', 1]);
    expect(await store.loadProgress('p')).toMatchObject({ step: 1, stateJson: '{"a":1}' });
    const operatorEvents = (await store.listEvents('p')).filter((e) => e.outcome === 'operator').map((e) => e.detail);
    expect(operatorEvents).toEqual([
      'rerun 1 from step 3 by olga (operator): 1 results moved to history; state kept as it is (none recorded at step 3)',
      'rerun 2 from step 2 by olga (operator): 1 results moved to history; state as it was at step 1',
    ]);
  });

  it('the bound on a copied state counts characters, not UTF-16 units: both stores copy a state of emoji up to it, and none past it', async () => {
    const ckpt = new Checkpoint(store, 'e', { clock: h.clock });
    // {"p":"…"} is 8 characters around the padding; each 😀 is one character and two UTF-16 units.
    const emoji = (characters: number) => ({ p: '😀'.repeat(characters - 8) });
    await ckpt.saveProgress(0, emoji(PRIOR_STATE_MAX_CHARS));
    await ckpt.runOnce('e:step:0', () => 0, { step: 0 });
    await ckpt.saveProgress(1, emoji(PRIOR_STATE_MAX_CHARS + 1));
    await ckpt.runOnce('e:step:1', () => 1, { step: 1 });
    const copied = async (n: number) => (await store.getCommitted(`e:step:${n}`))!.priorStateJson;
    expect(await copied(0)).toBe(JSON.stringify(emoji(PRIOR_STATE_MAX_CHARS)));
    expect(await copied(1)).toBeNull();
  });

  it("a library loop of the article's shape (load, runOnce, saveProgress) gets its state back too", async () => {
    /** One pass of the loop over 30 steps; `version` makes steps from 20 on answer differently. */
    async function loop(id: string, version: (n: number) => number) {
      const ckpt = new Checkpoint(store, id, { workflow: 'article-loop', totalSteps: 30, clock: h.clock });
      const { step: start, state } = await ckpt.load<State>();
      let { sum = 0, seen = 0 } = state;
      for (let n = start; n < 30; n++) {
        const { result } = await ckpt.runOnce(
          `${id}:step:${n}`,
          () => {
            count(`${id}:step:${n}`);
            return version(n);
          },
          { step: n },
        );
        sum += result;
        seen++;
        await ckpt.saveProgress(n + 1, { sum, seen, last: result });
      }
      await ckpt.complete({ sum, seen });
    }
    const v1 = (n: number) => n;
    const v2 = (n: number) => (n < 20 ? n : n * 100);
    await loop('lib', v1);
    await loop('lib-fresh', v2);
    const outcome = await rewind.rerun(deps, OPERATOR, { runId: 'lib', fromStep: 20 });
    expect([outcome.state, outcome.stateStep, outcome.run.status]).toEqual(['restored', 20, 'queued']);
    await loop('lib', v2);
    expect(executions('lib')).toEqual(Array.from({ length: 30 }, (_, n) => (n < 20 ? 1 : 2)));
    expect(await final('lib')).toEqual(await final('lib-fresh'));
    expect((await final('lib')).state).toEqual({ sum: 190 + 24_500, seen: 30, last: 2900 });
  });
});
