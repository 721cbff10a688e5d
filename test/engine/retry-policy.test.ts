/**
 * Retry policies, run by a real Worker over a real store (a SQLite file, and PostgreSQL when it answers), on
 * the store's clock: a NonRetryableError fails the run after one attempt, a step timeout counts an attempt and
 * is retried, a step's own policy overrides its workflow's, each failed attempt's event records (as columns,
 * its detail being the error alone) which attempt of how many it was and when the next is due, and a policy that cannot work is refused when the workflow is defined. Side effects are counted.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { attemptNoteOf } from '../../lib/engine/attempt-note';
import { Worker } from '../../lib/engine/worker';
import { defineWorkflow, WorkflowRegistry } from '../../lib/engine/workflow';
import { InvalidInputError, NonRetryableError } from '../../lib/errors';
import type { RunStore, Store } from '../../lib/store/contract';
import { backends, type StoreHandle, untilRun } from '../support/backends';

const list = await backends();
const calls = new Map<string, number>();
const count = (key: string) => calls.set(key, (calls.get(key) ?? 0) + 1).get(key)!;

const refused = defineWorkflow({
  name: 'refused',
  input: z.object({}),
  retry: { maxAttempts: 10, backoff: { initialMs: 10, maxMs: 10 } },
  async run(ctx) {
    await ctx.step('charge', () => {
      count(`${ctx.runId}:charge`);
      throw new NonRetryableError('card declined: do not retry');
    });
  },
});

/** The first two attempts hang past the timeout (watching their signal); the third answers. */
const slow = defineWorkflow({
  name: 'slow',
  input: z.object({}),
  retry: { maxAttempts: 5, backoff: { initialMs: 100, factor: 2, maxMs: 1000 } },
  async run(ctx) {
    const { result } = await ctx.step(
      'fetch',
      (step) => {
        const n = count(`${ctx.runId}:fetch`);
        if (n >= 3) return `answer on attempt ${step.attempt}`;
        return new Promise<string>((_, reject) =>
          step.signal.addEventListener(
            'abort',
            () => {
              count(`${ctx.runId}:aborted`);
              reject(step.signal.reason);
            },
            { once: true },
          ),
        );
      },
      { timeoutMs: 200 },
    );
    return result;
  },
});

/** A step's own list of errors to retry: a TypeError is not among them, so it fails at once. */
const picky = defineWorkflow({
  name: 'picky',
  input: z.object({}),
  retry: { maxAttempts: 6, backoff: { initialMs: 10, maxMs: 10 } },
  async run(ctx) {
    await ctx.step(
      'flaky',
      () => {
        if (count(`${ctx.runId}:flaky`) < 3) throw Object.assign(new Error('reset'), { code: 'ECONNRESET' });
        return 'ok';
      },
      { retryOn: ['ECONNRESET'], maxAttempts: 4 },
    );
    await ctx.step(
      'typo',
      () => {
        count(`${ctx.runId}:typo`);
        throw new TypeError('x is not a function');
      },
      { retryOn: ['ECONNRESET'] },
    );
  },
});

const registry = new WorkflowRegistry([refused, slow, picky]);

describe.each(list)('retry policies on $name', (backend) => {
  let h: StoreHandle;
  let store: Store & RunStore;
  let worker: Worker;
  let running: Promise<void>;

  beforeEach(async () => {
    h = await backend.open();
    store = h.store as Store & RunStore;
    calls.clear();
    worker = new Worker({ store, registry, pollMs: 10, heartbeatMs: 50, clock: h.clock });
    running = worker.run();
  });
  afterEach(async () => {
    worker.stop();
    await h.settle(running);
    await h.close();
  });

  const failures = async (id: string) => (await store.listEvents(id)).filter((e) => e.outcome === 'failed');

  it('a NonRetryableError fails the run after exactly one attempt, with its message', async () => {
    await store.createRun({ id: 'nr-1', workflow: 'refused', inputJson: '{}', totalSteps: null });
    await untilRun(h, 'nr-1', 'failed');
    expect(calls.get('nr-1:charge')).toBe(1);
    expect((await store.getRun('nr-1'))?.error).toBe('card declined: do not retry');
    const failed = await failures('nr-1');
    expect(failed.length).toBe(1);
    expect(failed[0]).toMatchObject({
      detail: 'NonRetryableError: card declined: do not retry',
      attempt: 1,
      maxAttempts: 10,
      retryAt: null,
    });
    expect(attemptNoteOf(failed[0]!)).toEqual({
      error: 'NonRetryableError: card declined: do not retry',
      note: { attempt: 1, maxAttempts: 10, retryAt: null, gaveUp: 'NonRetryableError' },
    });
    expect(await store.listCommitted('nr-1')).toEqual([]);
  });

  it('a step timeout aborts its signal, counts as an attempt and is retried until an attempt answers', async () => {
    await store.createRun({ id: 'to-1', workflow: 'slow', inputJson: '{}', totalSteps: null });
    await untilRun(h, 'to-1', 'completed');
    expect(calls.get('to-1:fetch')).toBe(3);
    expect(calls.get('to-1:aborted')).toBe(2);
    expect(JSON.parse((await store.getRun('to-1'))!.outputJson!)).toBe('answer on attempt 3');
    const failed = await failures('to-1');
    expect(failed.length).toBe(2);
    const notes = failed.map((e) => attemptNoteOf(e));
    expect(failed.map((e) => [e.attempt, e.maxAttempts, e.retryAt === null])).toEqual([
      [1, 5, false],
      [2, 5, false],
    ]);
    expect(notes.map((n) => n.error)).toEqual([
      'StepTimeoutError: step to-1:fetch timed out after 200 ms',
      'StepTimeoutError: step to-1:fetch timed out after 200 ms',
    ]);
    expect(notes.map((n) => [n.note?.attempt, n.note?.maxAttempts])).toEqual([
      [1, 5],
      [2, 5],
    ]);
    // The retry's due time: the event's own time plus the backoff (100 ms, then 200 ms), to the store's second.
    for (const [i, wait] of [100, 200].entries()) {
      const due = notes[i]!.note!.retryAt!;
      expect(due).toBeCloseTo(failed[i]!.retryAt! * 1000, 3);
      expect(Math.abs(due - failed[i]!.at * 1000 - wait)).toBeLessThan(1000);
    }
    expect((await store.listCommitted('to-1')).length).toBe(1);
  });

  it("a step's own retryOn and maxAttempts win over its workflow's: listed errors retried, others fail at once", async () => {
    await store.createRun({ id: 'pk-1', workflow: 'picky', inputJson: '{}', totalSteps: null });
    await untilRun(h, 'pk-1', 'failed');
    expect(calls.get('pk-1:flaky')).toBe(3);
    expect(calls.get('pk-1:typo')).toBe(1);
    expect((await store.getRun('pk-1'))?.error).toBe('x is not a function');
    const notes = (await failures('pk-1')).map((e) => attemptNoteOf(e).note);
    expect(notes.map((n) => [n?.attempt, n?.maxAttempts, n?.gaveUp])).toEqual([
      [1, 4, null],
      [2, 4, null],
      [1, 6, 'not retryable'],
    ]);
  });
});

describe('invalid retry policies are refused when the workflow is defined', () => {
  const base = { name: 'wf', input: z.object({}), run: async () => null };
  it.each([
    [{ backoff: { factor: 0.5 } }, 'workflow "wf": retry.backoff.factor: must be ≥ 1'],
    [{ maxAttempts: 0 }, 'workflow "wf": retry.maxAttempts: must be ≥ 1'],
    [{ maxAttempts: 2.5 }, 'workflow "wf": retry.maxAttempts: must be a whole number'],
    [
      { backoff: { initialMs: 500, maxMs: 100 } },
      'workflow "wf": retry.backoff.maxMs: must be ≥ backoff.initialMs (500)',
    ],
    [{ backoff: { initialMs: -1 } }, 'workflow "wf": retry.backoff.initialMs: initialMs must be ≥ 0'],
    [{ timeoutMs: 0 }, 'workflow "wf": retry.timeoutMs: must be ≥ 1'],
    [{ retryOn: ['A'], nonRetryable: ['B'] }, 'workflow "wf": retry.retryOn: give retryOn or nonRetryable, not both'],
    [{ retryOn: [] }, 'workflow "wf": retry.retryOn: must list at least one error name or code'],
    [
      { nonRetryable: 'TypeError' },
      'workflow "wf": retry.nonRetryable: must be a list of error names or codes, or a function',
    ],
    [
      { maxAtempts: 3 },
      'workflow "wf": retry: unknown field(s) maxAtempts (maxAttempts, backoff, timeoutMs, retryOn, nonRetryable)',
    ],
  ])('%j', (retry, message) => {
    let error: unknown;
    try {
      defineWorkflow({ ...base, retry: retry as never });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(InvalidInputError);
    expect((error as Error).message).toBe(message);
  });

  it('a valid policy, a predicate included, is taken as given', () => {
    const retryOn = (error: unknown) => error instanceof RangeError;
    const wf = defineWorkflow({
      ...base,
      retry: { maxAttempts: 5, backoff: { initialMs: 0, maxMs: 0, factor: 1 }, timeoutMs: 1, retryOn },
    });
    expect(wf.retry?.retryOn).toBe(retryOn);
  });
});
