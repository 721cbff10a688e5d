/**
 * What a rewind would redo cost last time (lib/gateway/rewind-cost.ts, lib/control/rewind `cost`), on every
 * backend: the span is the rewind's own (N through the run's last step), refused as the rewind refuses it;
 * the calls are the gateway's records of those steps, each step's latest execution once (live calls, or the
 * ones a rerun retired while the step has not run again); the rerun and fork answers carry the same figure,
 * read before the calls moved. And the one sentence the CLI and the dialogs say.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type Caller, type ControlDeps, rewind } from '../../lib/control';
import { compact } from '../../lib/count';
import { RewindRefusedError } from '../../lib/errors';
import { lastCostText, usd } from '../../lib/gateway/rewind-cost';
import type { ModelCallAnswer, Store } from '../../lib/store/contract';
import { backends, type StoreHandle } from '../support/backends';

const list = await backends();
const OPERATOR: Caller = { actor: 'olga (operator)', role: 'operator', channel: 'api' };
const VIEWER: Caller = { actor: 'vic (viewer)', role: 'viewer', channel: 'api' };

const answer = (over: Partial<ModelCallAnswer>): ModelCallAnswer => ({
  status: 200,
  headersJson: '{}',
  body: '{}',
  model: 'm',
  inputTokens: 1000,
  outputTokens: 100,
  cachedTokens: 400,
  costUsd: 0.01,
  ...over,
});

describe.each(list)('the last cost of a rewind on $name', (backend) => {
  let h: StoreHandle;
  let store: Store;
  let deps: ControlDeps;

  /** One model call of run r's step, through the gateway's own store calls. */
  async function call(step: number | null, over: Partial<ModelCallAnswer>, key = `r:step:${step}`) {
    const begun = await store.beginModelCall({
      idemKey: step === null ? null : key,
      runId: 'r',
      step,
      api: 'openai.chat',
      model: 'm',
      fingerprint: 'f1',
      framing: 'json',
      leaseMs: 60_000,
    });
    if (begun.kind !== 'lead') throw new Error(`expected to lead, got ${begun.kind}`);
    expect(await store.completeModelCall(begun.callId, begun.token, answer(over))).toBe(true);
  }

  beforeEach(async () => {
    h = await backend.open();
    store = h.store;
    deps = { store: async () => store, claimTtlMs: 30_000, maxBytes: 100_000 };
    await store.createRun({ id: 'r', workflow: 'w', inputJson: '{}', totalSteps: 4 });
    const now = await h.now();
    await h.exec(`UPDATE runs SET status = 'completed' WHERE id = 'r'`);
    for (let n = 0; n < 4; n++) {
      await h.exec(
        `INSERT INTO committed (idem_key, run_id, result_json, committed_at, step, source) VALUES ('r:step:${n}', 'r', '{}', ${now}, ${n}, 'executed')`,
      );
    }
    await call(0, { costUsd: 1 });
    await call(1, { costUsd: 0.25, inputTokens: 20_000, outputTokens: 1_000, cachedTokens: 5_000 });
    await call(2, { costUsd: 0.17, inputTokens: 30_000, outputTokens: 10_000, cachedTokens: 0 });
    await call(3, { costUsd: null, inputTokens: 500, outputTokens: 0, cachedTokens: 0 });
    await call(null, { costUsd: 9 }); // unkeyed: no step, never a rewind's
  });
  afterEach(() => h.close());

  it("sums the steps a rewind from N redoes, to the run's last step, and says so", async () => {
    const cost = await rewind.cost(deps, VIEWER, { runId: 'r', fromStep: 1 });
    expect(cost).toEqual({
      fromStep: 1,
      toStep: 3,
      calls: 3,
      inputTokens: 50_500,
      outputTokens: 11_000,
      cachedTokens: 5_000,
      tokens: 61_500,
      costUsd: expect.closeTo(0.42, 10),
      unpriced: 1,
    });
    expect(lastCostText(cost)).toBe('steps 1–3 cost $0.42 (+1 unpriced call) and 62k tokens last time');
    const last = await rewind.cost(deps, VIEWER, { runId: 'r', fromStep: '3' });
    expect(lastCostText(last)).toBe('step 3 made 1 model call (500 tokens) of unknown cost last time');
  });

  it('refuses a step beyond the last and a run with no row as the rewind does, writing nothing', async () => {
    const before = JSON.stringify(await store.listModelCalls({ runId: 'r' }));
    await expect(rewind.cost(deps, VIEWER, { runId: 'r', fromStep: 4 })).rejects.toThrow(
      "fromStep 4 is beyond run r's last step (3)",
    );
    await expect(rewind.rerun(deps, OPERATOR, { runId: 'r', fromStep: 4 })).rejects.toThrow(
      "fromStep 4 is beyond run r's last step (3)",
    );
    await expect(rewind.cost(deps, VIEWER, { runId: 'nobody', fromStep: 0 })).rejects.toBeInstanceOf(
      RewindRefusedError,
    );
    await expect(rewind.cost(deps, VIEWER, { runId: 'r', fromStep: -1 })).rejects.toThrow('fromStep');
    expect(JSON.stringify(await store.listModelCalls({ runId: 'r' }))).toBe(before);
    expect((await store.getRun('r'))?.status).toBe('completed');
  });

  it('a rerun answers the cost of what it redoes; its retired calls count until the step runs again, once', async () => {
    const preview = await rewind.cost(deps, VIEWER, { runId: 'r', fromStep: 2 });
    const rerun = await rewind.rerun(deps, OPERATOR, { runId: 'r', fromStep: 2 });
    expect(rerun.lastCost).toEqual(preview);
    expect(rerun.lastCost).toMatchObject({ calls: 2, tokens: 40_500, costUsd: 0.17, unpriced: 1 });
    // The calls moved to history, and are still what steps 2–3 cost last time.
    expect(await rewind.cost(deps, VIEWER, { runId: 'r', fromStep: 2 })).toEqual(preview);
    // Step 2 runs again (dearer); step 3 not yet: step 2 is its new call only, step 3 its retired one.
    await call(2, { costUsd: 0.5, inputTokens: 1_000, outputTokens: 0, cachedTokens: 0 });
    expect(await rewind.cost(deps, VIEWER, { runId: 'r', fromStep: 2 })).toMatchObject({
      calls: 2,
      tokens: 1_500,
      costUsd: 0.5,
      unpriced: 1,
    });
  });

  it('a fork answers the same figure and leaves the original as it was', async () => {
    const fork = await rewind.fork(deps, OPERATOR, { runId: 'r', fromStep: 3, id: 'r-b' });
    expect(fork.lastCost).toMatchObject({ fromStep: 3, toStep: 3, calls: 1, tokens: 500, costUsd: 0, unpriced: 1 });
    expect(await rewind.cost(deps, VIEWER, { runId: 'r-b', fromStep: 3 })).toMatchObject({ calls: 0 });
    expect((await store.listModelCalls({ runId: 'r' })).every((c) => c.retiredAt === null)).toBe(true);
  });
});

describe('the sentence', () => {
  const cost = { fromStep: 20, toStep: 39, calls: 12, tokens: 61_000, costUsd: 0.42, unpriced: 0 };
  it('says the cost and the tokens, or that nothing was recorded', () => {
    expect(lastCostText(cost)).toBe('steps 20–39 cost $0.42 and 61k tokens last time');
    expect(lastCostText({ ...cost, calls: 0, tokens: 0, costUsd: 0 })).toBe('no model calls recorded for steps 20–39');
    expect(lastCostText({ ...cost, toStep: 20, calls: 0 })).toBe('no model calls recorded for step 20');
    expect(lastCostText({ ...cost, unpriced: 12 })).toBe(
      'steps 20–39 made 12 model calls (61k tokens) of unknown cost last time',
    );
    expect(lastCostText({ ...cost, unpriced: 2 })).toBe(
      'steps 20–39 cost $0.42 (+2 unpriced calls) and 61k tokens last time',
    );
  });
  it('writes amounts and counts short, a cheap step not as free', () => {
    expect([0, 0.00000012, 0.0031, 0.04567, 0.1, 0.425, 12.5].map(usd)).toEqual([
      '$0.00',
      '<$0.0001',
      '$0.0031',
      '$0.046',
      '$0.10',
      '$0.42',
      '$12.50',
    ]);
    expect([0, 850, 1_000, 1_249, 9_960, 61_499, 999_499, 999_500, 3_400_000].map(compact)).toEqual([
      '0',
      '850',
      '1k',
      '1.2k',
      '10k',
      '61k',
      '999k',
      '1M',
      '3.4M',
    ]);
  });
});
