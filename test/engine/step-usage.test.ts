/**
 * ctx.recordUsage, run by a real Worker over a real store on every backend: a step's reports land in the run's
 * ledger, priced by the worker's table when no cost is given; a step that fails after reporting and is retried
 * keeps its first attempt's reports beside the retry's (both calls were paid for), each once; a bad report is
 * refused naming its field, and nothing is written.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { Worker } from '../../lib/engine/worker';
import { defineWorkflow, WorkflowRegistry } from '../../lib/engine/workflow';
import { runUsage } from '../../lib/gateway/ledger';
import type { RunStore, Store } from '../../lib/store/contract';
import { backends, type StoreHandle, untilRun } from '../support/backends';

const list = await backends();
const PRICES = { dated: 'test', models: { 'm-1': { input: 2, cachedInput: 1, output: 10 } } };
let refusals: string[] = [];

const reporter = defineWorkflow({
  name: 'reporter',
  input: z.object({}),
  retry: { maxAttempts: 3, backoff: { initialMs: 10, maxMs: 10 } },
  async run(ctx) {
    await ctx.step(
      'ask',
      async (step) => {
        for (const bad of [
          { model: '', inputTokens: 1, outputTokens: 1 },
          { model: 'm-1', inputTokens: -1, outputTokens: 1 },
          { model: 'm-1', inputTokens: 1, outputTokens: 1.5 },
          { model: 'm-1', inputTokens: 1, outputTokens: 1, cachedTokens: 2 },
          { model: 'm-1', inputTokens: 1, outputTokens: 1, costUsd: -0.1 },
        ])
          await step.recordUsage(bad).catch((e: Error) => refusals.push(e.message));
        // Priced by the table: 800 fresh × 2 + 200 cached × 1 + 100 out × 10, per million.
        await step.recordUsage({ model: 'm-1', inputTokens: 1000, outputTokens: 100, cachedTokens: 200 });
        await ctx.recordUsage({ model: 'other', inputTokens: 5 * step.attempt, outputTokens: 1, costUsd: 0.5 });
        if (step.attempt === 1) throw new Error('the first attempt fails after it reported');
        return 'asked';
      },
      { step: 0 },
    );
    await ctx.step('unnumbered', (step) => step.recordUsage({ model: 'other', inputTokens: 1, outputTokens: 2 }));
  },
});

describe.each(list)('ctx.recordUsage on $name', (backend) => {
  let h: StoreHandle;
  let store: Store & RunStore;
  let worker: Worker;
  let running: Promise<void>;

  beforeEach(async () => {
    h = await backend.open();
    store = h.store as Store & RunStore;
    refusals = [];
    worker = new Worker({
      store,
      registry: new WorkflowRegistry([reporter]),
      pollMs: 10,
      heartbeatMs: 50,
      prices: PRICES,
      clock: h.clock,
    });
    running = worker.run();
  });
  afterEach(async () => {
    worker.stop();
    await h.settle(running);
    await h.close();
  });

  it("counts each attempt's reports once, priced by the table, and refuses bad ones naming the field", async () => {
    await store.createRun({ id: 'u-1', workflow: 'reporter', inputJson: '{}', totalSteps: null });
    await untilRun(h, 'u-1', 'completed');
    const where = 'ctx.recordUsage (key u-1:ask)';
    expect(refusals).toEqual(
      [1, 2].flatMap(() => [
        `${where}: model must not be empty`,
        `${where}: inputTokens must be ≥ 0`,
        `${where}: outputTokens must be a whole number`,
        `${where}: cachedTokens must be at most inputTokens (1): cached tokens are part of the input`,
        `${where}: costUsd must be ≥ 0`,
      ]),
    );
    const calls = await store.listModelCalls({ runId: 'u-1' });
    expect(calls.map((c) => [c.idemKey, c.step, c.api, c.model, c.inputTokens, c.costUsd]).sort()).toEqual(
      [
        // The failed first attempt's calls were paid for: they stay, beside the retry's.
        ['u-1:ask:usage:1:0', 0, 'recorded', 'm-1', 1000, 0.0028],
        ['u-1:ask:usage:1:1', 0, 'recorded', 'other', 5, 0.5],
        ['u-1:ask:usage:2:0', 0, 'recorded', 'm-1', 1000, 0.0028],
        ['u-1:ask:usage:2:1', 0, 'recorded', 'other', 10, 0.5],
        // Not in the table: unpriced, counted for its tokens.
        ['u-1:unnumbered:usage:1:0', null, 'recorded', 'other', 1, null],
      ].sort(),
    );
    const usage = await runUsage(store, 'u-1');
    expect(usage).toMatchObject({ calls: 5, inputTokens: 2016, outputTokens: 204, cachedTokens: 400, unpriced: 1 });
    expect(usage.costUsd).toBeCloseTo(2 * (0.0028 + 0.5), 12);
  });
});
