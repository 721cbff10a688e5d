/**
 * A child id another run holds, on both backends: another workflow's run, a run of the child's workflow with other
 * input, or one with the same workflow and input that is not this parent's child. Retrying the start cannot change
 * that, so the step `child:<name>` fails at its first attempt (one `failed` event, no retry due) with a
 * NonRetryableError naming the id, whose cause is the refusal; the run holding the id is left as it was. One worker
 * in the test's process, on the store's clock: the retries the old code made wait on it, never on the wall clock.
 * A start refused for its workflow (none serves it) or its input is refused alike at every attempt: it fails so too.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { startRun } from '../../lib/engine/runs';
import { defineWorkflow, WorkflowRegistry } from '../../lib/engine/workflow';
import { NonRetryableError, RunExistsError } from '../../lib/errors';
import { type StoreHandle, untilRun } from '../support/backends';
import { servedStores } from '../support/served-stores';

const double = defineWorkflow({
  name: 'double',
  input: z.object({ n: z.number().int() }),
  async run(ctx, input) {
    return (await ctx.step('double', () => input.n * 2)).result;
  },
});
const other = defineWorkflow({
  name: 'other',
  input: z.object({}),
  async run() {
    return 'other';
  },
});
/** Starts its child under the id it is given. */
const parent = defineWorkflow({
  name: 'parent',
  input: z.object({ childId: z.string() }),
  async run(ctx, input) {
    return ctx.startChild('c', 'double', { n: 1 }, { id: input.childId });
  },
});
/** The same, catching the refusal: what its code can tell of it. */
const catcher = defineWorkflow({
  name: 'catcher',
  input: z.object({ childId: z.string() }),
  async run(ctx, input) {
    try {
      return await ctx.startChild('c', 'double', { n: 1 }, { id: input.childId });
    } catch (error) {
      if (!(error instanceof NonRetryableError) || !(error.cause instanceof RunExistsError)) throw error;
      return { code: error.code, taken: error.cause.runId, causeCode: error.cause.code };
    }
  },
});
/** Starts a child of the workflow and input it is given. */
const starter = defineWorkflow({
  name: 'starter',
  input: z.object({ workflow: z.string(), input: z.unknown() }),
  async run(ctx, input) {
    return ctx.startChild('c', input.workflow, input.input);
  },
});
const registry = new WorkflowRegistry([double, other, parent, catcher, starter]);

const stores = servedStores();

describe.each([['sqlite'], ['postgres']] as const)('a child id another run holds, on %s', (name) => {
  async function setup() {
    const h = await stores.open(name);
    if (!h) return null;
    const start = (workflow: string, input: object, id: string) => startRun(h.store, registry, { workflow, input, id });
    return { h, start };
  }
  /** Runs the worker until `id` has failed or completed; the store's clock moves meanwhile, so a backoff passes. */
  async function work(h: StoreHandle, id: string, status: 'failed' | 'completed') {
    stores.serve(h, registry, { concurrency: 1 });
    await untilRun(h, id, status);
  }
  /** The attempts the child's step made: its `failed` events. */
  async function failedAttempts(h: StoreHandle, parentId: string) {
    const events = await h.store.listEvents(parentId);
    return events
      .filter((e) => e.outcome === 'failed' && e.idemKey === `${parentId}:child:c`)
      .map((e) => ({ attempt: e.attempt, retryAt: e.retryAt, detail: e.detail }));
  }

  it.each([
    ['another workflow', 'other', {}, 'run taken exists with another workflow: it is other, not double'],
    ['other input', 'double', { n: 2 }, 'run taken exists with another input: input.n is 2, not 1'],
  ])('fails at the first attempt when a run of %s holds it, naming the id', async (_, workflow, input, refusal) => {
    const s = await setup();
    if (!s) return;
    await s.start(workflow, input, 'taken');
    const held = await s.h.store.getRun('taken');
    await s.start('parent', { childId: 'taken' }, 'p');
    await work(s.h, 'p', 'failed');

    const message = `startChild: ${refusal}`;
    expect(await failedAttempts(s.h, 'p')).toEqual([
      { attempt: 1, retryAt: null, detail: `NonRetryableError: ${message}` },
    ]);
    expect((await s.h.store.getRun('p'))?.error).toBe(message);
    // The run that holds the id is not the parent's, and nothing of it changed but what its own worker did.
    const after = await s.h.store.getRun('taken');
    expect([after?.workflow, after?.inputJson, after?.parentRunId]).toEqual([held?.workflow, held?.inputJson, null]);
    expect(await s.h.store.listWaits('p')).toEqual([]);
  });

  it('fails at the first attempt when a run of the same workflow and input holds it but is not its child', async () => {
    const s = await setup();
    if (!s) return;
    await s.start('double', { n: 1 }, 'stranger');
    await s.start('parent', { childId: 'stranger' }, 'p');
    await work(s.h, 'p', 'failed');
    const message = 'startChild: run stranger exists and is not a child of p';
    expect(await failedAttempts(s.h, 'p')).toEqual([
      { attempt: 1, retryAt: null, detail: `NonRetryableError: ${message}` },
    ]);
    expect((await s.h.store.getRun('p'))?.error).toBe(message);
  });

  it.each([
    ['a workflow no worker serves', 'nowhere', { n: 1 }, 'workflow "nowhere" (known: '],
    ['an input its schema refuses', 'double', { n: 'one' }, 'invalid input for double: n: must be a number'],
  ])('fails at the first attempt when the start names %s', async (_, workflow, input, refusal) => {
    const s = await setup();
    if (!s) return;
    await s.start('starter', { workflow, input }, 'p');
    await work(s.h, 'p', 'failed');
    const attempts = await failedAttempts(s.h, 'p');
    expect(attempts.map(({ attempt, retryAt }) => ({ attempt, retryAt }))).toEqual([{ attempt: 1, retryAt: null }]);
    expect(attempts[0]!.detail).toContain(`NonRetryableError: startChild: `);
    expect(attempts[0]!.detail).toContain(refusal);
    expect(await s.h.store.getRun('p:c')).toBeNull();
  });

  it("hands the workflow's code a NonRetryableError whose cause is the refusal, to catch", async () => {
    const s = await setup();
    if (!s) return;
    await s.start('other', {}, 'taken');
    await s.start('catcher', { childId: 'taken' }, 'p');
    await work(s.h, 'p', 'completed');
    expect(JSON.parse((await s.h.store.getRun('p'))!.outputJson!)).toEqual({
      code: 'NON_RETRYABLE',
      taken: 'taken',
      causeCode: 'CONFLICT',
    });
    expect(await failedAttempts(s.h, 'p')).toHaveLength(1);
  });
});
