/**
 * ctx.stream, run by a real Worker over a real store on every backend: a step's text lands in its transcript
 * in order; a step that fails after streaming and is retried shows the retry's text only, never both; a step
 * without a number is told how to give one.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { Worker } from '../../lib/engine/worker';
import { defineWorkflow, WorkflowRegistry } from '../../lib/engine/workflow';
import type { RunStore, Store } from '../../lib/store/contract';
import { backends, type StoreHandle, untilRun } from '../support/backends';

const list = await backends();
let tries = 0;

const talker = defineWorkflow({
  name: 'talker',
  input: z.object({}),
  retry: { maxAttempts: 3, backoff: { initialMs: 10, maxMs: 10 } },
  async run(ctx) {
    await ctx.step(
      'speak',
      async (step) => {
        tries++;
        void step.stream(`try ${step.attempt}: `);
        await ctx.stream('one ');
        await step.stream('two');
        if (step.attempt === 1) throw new Error('the first attempt fails after it streamed');
        return 'spoken';
      },
      { step: 0 },
    );
    await ctx.step('unnumbered', (step) => step.stream('lost'));
  },
});

describe.each(list)('ctx.stream on $name', (backend) => {
  let h: StoreHandle;
  let store: Store & RunStore;
  let worker: Worker;
  let running: Promise<void>;

  beforeEach(async () => {
    h = await backend.open();
    store = h.store as Store & RunStore;
    tries = 0;
    worker = new Worker({
      store,
      registry: new WorkflowRegistry([talker]),
      pollMs: 10,
      heartbeatMs: 50,
      clock: h.clock,
    });
    running = worker.run();
  });
  afterEach(async () => {
    worker.stop();
    await h.settle(running);
    await h.close();
  });

  it("keeps the newest attempt's text in order, and refuses a step without a number", async () => {
    await store.createRun({ id: 's-1', workflow: 'talker', inputJson: '{}', totalSteps: null });
    await untilRun(h, 's-1', 'failed');
    expect(tries).toBe(2);
    expect(await store.readStepStream('s-1', 0)).toEqual({ attempt: 2, chunks: ['try 2: ', 'one ', 'two'] });
    expect((await store.getRun('s-1'))?.error).toContain(
      "ctx.stream needs the step's number to show it on its page: ctx.step(name, fn, { step: n }) (key s-1:unnumbered)",
    );
  });
});
