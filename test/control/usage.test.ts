/**
 * lib/control/usage on every backend: one step's calls (pending and retired ones listed, the complete ones
 * summed, retired included since they were paid), a run's ledger (a run known only by its calls answers; one
 * the store knows nothing of is NotFoundError), a workflow's (zeros for one the catalog knows but no run
 * has made a call of; NotFoundError for a name nothing knows); a bad field is refused naming it, before the
 * store is opened.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { type Caller, type ControlDeps, type ControlStore, usage } from '../../lib/control';
import { defineWorkflow, WorkflowRegistry } from '../../lib/engine/workflow';
import { ControlInputError, NotFoundError } from '../../lib/errors';
import type { ModelCallAnswer, ModelCallStart } from '../../lib/store/contract';
import { backends, type StoreHandle } from '../support/backends';

const list = await backends();

const VIEWER: Caller = { actor: 'vera (viewer)', role: 'viewer', channel: 'dashboard' };

const drafting = defineWorkflow({
  name: 'drafting',
  input: z.strictObject({}),
  totalSteps: 2,
  async run() {},
});

const start = (over: Partial<ModelCallStart>): ModelCallStart => ({
  idemKey: null,
  runId: 'r1',
  step: null,
  api: 'openai.chat',
  model: null,
  fingerprint: 'f',
  framing: 'json',
  leaseMs: 60_000,
  ...over,
});

const paid = (over: Partial<ModelCallAnswer>): ModelCallAnswer => ({
  status: 200,
  headersJson: '{}',
  body: '{}',
  model: null,
  inputTokens: null,
  outputTokens: null,
  cachedTokens: null,
  costUsd: null,
  ...over,
});

const totals = (calls: number, i: number, o: number, c: number, usd: number, unpriced: number) => ({
  calls,
  inputTokens: i,
  outputTokens: o,
  cachedTokens: c,
  costUsd: usd,
  unpriced,
});

describe.each(list)('lib/control usage on $name', (backend) => {
  let h: StoreHandle;
  let store: ControlStore;
  let opened: number;
  let deps: ControlDeps;

  beforeEach(async () => {
    h = await backend.open();
    store = h.store;
    opened = 0;
    deps = {
      store: async () => {
        opened++;
        return store;
      },
      claimTtlMs: 30_000,
      maxBytes: 1000,
      workflows: async () => new WorkflowRegistry([drafting]),
    };
  });
  afterEach(() => h.close());

  async function record(call: Partial<ModelCallStart>, answer: Partial<ModelCallAnswer>): Promise<void> {
    const begun = await store.beginModelCall(start(call));
    if (begun.kind !== 'lead') throw new Error('expected to lead');
    await store.completeModelCall(begun.callId, begun.token, paid(answer));
  }

  it("lists a step's calls, pending and retired ones too, and sums the complete ones", async () => {
    await store.createRun({ id: 'r1', workflow: 'drafting', inputJson: '{}', totalSteps: 2 });
    await record(
      { idemKey: 'r1:step:0', step: 0 },
      { model: 'gpt-a', inputTokens: 100, outputTokens: 20, cachedTokens: 5, costUsd: 0.5 },
    );
    await store.actOnRun('r1', 'cancel', 'olga');
    await store.rerunRun({
      runId: 'r1',
      fromStep: 0,
      inputJson: null,
      actor: 'olga',
      reason: null,
      claimTtlMs: 30_000,
    });
    await h.elapse(1000);
    // The rerun asks again: a new call under the same key, its price unknown, and one still asking upstream.
    await record({ idemKey: 'r1:step:0', step: 0 }, { model: 'mystery', inputTokens: 10, outputTokens: 1 });
    await h.elapse(1000);
    await store.beginModelCall(start({ idemKey: 'r1:step:0:b', step: 0, model: 'gpt-a' }));
    await record({ idemKey: 'r1:step:1', step: 1 }, { model: 'gpt-a', inputTokens: 9, outputTokens: 9, costUsd: 1 });

    const step = await usage.ofStep(deps, VIEWER, { runId: 'r1', step: 0 });
    expect(step.usage).toEqual(totals(2, 110, 21, 5, 0.5, 1));
    expect(
      step.calls.map((c) => [c.model, c.state, c.inputTokens, c.costUsd, c.retiredAt === null ? 'current' : 'retired']),
    ).toEqual([
      ['gpt-a', 'complete', 100, 0.5, 'retired'],
      ['mystery', 'complete', 10, null, 'current'],
      ['gpt-a', 'pending', null, null, 'current'],
    ]);
    // A step that made no call: an empty list, not a refusal.
    expect(await usage.ofStep(deps, VIEWER, { runId: 'r1', step: 5 })).toEqual({
      runId: 'r1',
      step: 5,
      usage: totals(0, 0, 0, 0, 0, 0),
      calls: [],
    });
  });

  it("reads a run's ledger, one known only by its calls included, and refuses one nothing knows", async () => {
    await record({ runId: 'outside-1', idemKey: 'outside-1:step:3', step: 3 }, { model: 'gpt-a', inputTokens: 4 });
    const ledger = await usage.ofRun(deps, VIEWER, { runId: 'outside-1' });
    expect(ledger).toEqual({
      runId: 'outside-1',
      ...totals(1, 4, 0, 0, 0, 1),
      bySteps: [{ step: 3, usage: totals(1, 4, 0, 0, 0, 1) }],
      byModel: [{ model: 'gpt-a', usage: totals(1, 4, 0, 0, 0, 1) }],
    });
    await expect(usage.ofRun(deps, VIEWER, { runId: 'nope' })).rejects.toBeInstanceOf(NotFoundError);
  });

  it("reads a workflow's ledger: zeros for one the catalog knows, NotFoundError for a name nothing knows", async () => {
    expect(await usage.ofWorkflow(deps, VIEWER, { workflow: 'drafting' })).toEqual({
      workflow: 'drafting',
      ...totals(0, 0, 0, 0, 0, 0),
      byModel: [],
    });
    await expect(usage.ofWorkflow(deps, VIEWER, { workflow: 'never-heard' })).rejects.toBeInstanceOf(NotFoundError);
    // A run of a workflow nothing serves any more still makes the name known.
    await store.createRun({ id: 'r9', workflow: 'retired-flow', inputJson: '{}', totalSteps: null });
    expect((await usage.ofWorkflow(deps, VIEWER, { workflow: 'retired-flow' })).calls).toBe(0);
  });

  it('refuses a bad field naming it, before the store is opened', async () => {
    const refused = async (work: Promise<unknown>) => {
      const error = await work.catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ControlInputError);
      return (error as ControlInputError).fields;
    };
    expect(await refused(usage.ofWorkflow(deps, VIEWER, { workflow: 'Bad Name' }))).toEqual({
      workflow: ['must be a workflow name (1-64 lowercase letters, digits and dashes)'],
    });
    expect(await refused(usage.ofStep(deps, VIEWER, { runId: 'r1', step: -1 }))).toEqual({
      step: ['must be 0 or more'],
    });
    expect(Object.keys(await refused(usage.ofRun(deps, VIEWER, { runId: '' })))).toEqual(['runId']);
    expect(opened).toBe(0);
  });
});
