/**
 * Recorded model calls on every backend (lib/store/contract/model-calls.ts): one key leads once; a live lease
 * makes the next request wait, an expired one is taken over with the old chunks gone; a stored answer is
 * handed back with its chunks in order; another fingerprint is IdempotencyKeyReuseError and changes nothing;
 * an abandoned call leaves nothing; a lost lease fences every write; the ledger's sums by model, over every
 * call or one workflow's runs, count complete calls only.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { IdempotencyKeyReuseError } from '../../lib/errors';
import type { ModelCallAnswer, ModelCallStart, Store } from '../../lib/store/contract';
import { backends, type StoreHandle } from '../support/backends';

const list = await backends();

const start = (over: Partial<ModelCallStart> = {}): ModelCallStart => ({
  idemKey: 'r1:step:0',
  runId: 'r1',
  step: 0,
  api: 'openai.chat',
  model: 'm',
  fingerprint: 'f1',
  framing: 'sse',
  leaseMs: 200,
  ...over,
});

const answer: ModelCallAnswer = {
  status: 200,
  headersJson: '{"content-type":"text/event-stream"}',
  body: null,
  model: 'm-2026',
  inputTokens: 11,
  outputTokens: 7,
  cachedTokens: 3,
  costUsd: 0.5,
};

describe.each(list)('model calls on $name', (backend) => {
  let h: StoreHandle;
  let store: Store;

  beforeEach(async () => {
    h = await backend.open();
    store = h.store;
  });
  afterEach(() => h.close());

  it('leads once, makes a second request wait, then hands back the stored answer and its chunks in order', async () => {
    const first = await store.beginModelCall(start());
    expect(first.kind).toBe('lead');
    if (first.kind !== 'lead') return;
    expect((await store.beginModelCall(start())).kind).toBe('in_flight');
    expect(await store.appendModelCallChunks(first.callId, first.token, 0, ['data: a\n\n', 'data: b'])).toBe(true);
    expect(await store.appendModelCallChunks(first.callId, first.token, 2, ['\n\n'])).toBe(true);
    expect(await store.completeModelCall(first.callId, first.token, answer)).toBe(true);
    const again = await store.beginModelCall(start());
    expect(again.kind).toBe('answered');
    if (again.kind !== 'answered') return;
    expect(again.call).toMatchObject({ state: 'complete', leaseToken: null, inputTokens: 11, outputTokens: 7 });
    expect(await store.readModelCallChunks(again.call.id)).toEqual(['data: a\n\n', 'data: b', '\n\n']);
    expect((await store.listModelCalls({ runId: 'r1' })).map((r) => r.id)).toEqual([first.callId]);
  });

  it('refuses another fingerprint under the key, pending or answered, and writes nothing', async () => {
    const first = await store.beginModelCall(start());
    await expect(store.beginModelCall(start({ fingerprint: 'f2' }))).rejects.toBeInstanceOf(IdempotencyKeyReuseError);
    if (first.kind !== 'lead') throw new Error('expected to lead');
    await store.completeModelCall(first.callId, first.token, answer);
    await expect(store.beginModelCall(start({ fingerprint: 'f2' }))).rejects.toBeInstanceOf(IdempotencyKeyReuseError);
    expect(await store.listModelCalls({ runId: 'r1' })).toHaveLength(1);
  });

  it('takes over an expired lease with the old chunks gone, and fences the old holder out', async () => {
    const first = await store.beginModelCall(start());
    if (first.kind !== 'lead') throw new Error('expected to lead');
    await store.appendModelCallChunks(first.callId, first.token, 0, ['data: half']);
    await h.elapse(1000);
    const second = await store.beginModelCall(start());
    expect(second).toMatchObject({ kind: 'lead', callId: first.callId });
    if (second.kind !== 'lead') return;
    expect(second.token).not.toBe(first.token);
    expect(await store.readModelCallChunks(first.callId)).toEqual([]);
    expect(await store.appendModelCallChunks(first.callId, first.token, 0, ['stale'])).toBe(false);
    expect(await store.renewModelCall(first.callId, first.token, 200)).toBe(false);
    expect(await store.completeModelCall(first.callId, first.token, answer)).toBe(false);
    expect(await store.renewModelCall(second.callId, second.token, 200)).toBe(true);
    expect(await store.completeModelCall(second.callId, second.token, answer)).toBe(true);
  });

  it('forgets an abandoned call, so the key can be tried again', async () => {
    const first = await store.beginModelCall(start());
    if (first.kind !== 'lead') throw new Error('expected to lead');
    await store.appendModelCallChunks(first.callId, first.token, 0, ['data: x']);
    await store.abandonModelCall(first.callId, first.token);
    expect(await store.getModelCall('r1:step:0')).toBeUndefined();
    expect(await store.readModelCallChunks(first.callId)).toEqual([]);
    expect((await store.beginModelCall(start())).kind).toBe('lead');
  });

  it('records calls without a key for the ledger, each its own row', async () => {
    for (let i = 0; i < 2; i++) {
      const call = await store.beginModelCall(start({ idemKey: null, step: null }));
      if (call.kind !== 'lead') throw new Error('expected to lead');
      await store.completeModelCall(call.callId, call.token, { ...answer, body: '{}' });
    }
    const rows = await store.listModelCalls({ runId: 'r1' });
    expect(rows.map((r) => [r.idemKey, r.state, r.body])).toEqual([
      [null, 'complete', '{}'],
      [null, 'complete', '{}'],
    ]);
  });

  it("sums complete calls by model, over every call or one workflow's runs, in one read", async () => {
    for (const [id, workflow] of [
      ['r1', 'alpha'],
      ['r2', 'alpha'],
      ['r3', 'beta'],
    ] as const)
      await store.createRun({ id, workflow, inputJson: '{}', totalSteps: null });
    const call = async (over: Partial<ModelCallStart>, paid: Partial<ModelCallAnswer>) => {
      const begun = await store.beginModelCall(start(over));
      if (begun.kind !== 'lead') throw new Error('expected to lead');
      await store.completeModelCall(begun.callId, begun.token, { ...answer, body: '{}', ...paid });
    };
    await call({}, { model: 'm-a', inputTokens: 100, outputTokens: 20, cachedTokens: 10, costUsd: 0.5 });
    await call(
      { idemKey: 'r1:step:1', step: 1 },
      { model: 'm-b', inputTokens: 10, outputTokens: 5, cachedTokens: null, costUsd: null },
    );
    await call(
      { idemKey: 'r2:step:0', runId: 'r2' },
      { model: 'm-a', inputTokens: 50, outputTokens: 10, cachedTokens: 0, costUsd: 0.25 },
    );
    await call(
      { idemKey: 'r3:step:0', runId: 'r3' },
      { model: 'm-a', inputTokens: 1, outputTokens: 1, cachedTokens: 1, costUsd: 0.125 },
    );
    // No run, and an answer that named no model: counted over every call, under null.
    await call(
      { idemKey: null, runId: null, step: null },
      { model: null, inputTokens: 7, outputTokens: 3, cachedTokens: null, costUsd: null },
    );
    // Still asking upstream: nothing is known of it yet.
    await store.beginModelCall(start({ idemKey: 'r2:step:1', runId: 'r2', step: 1, model: 'm-a' }));

    const usage = (model: string | null, calls: number, i: number, o: number, c: number, usd: number, un: number) => ({
      model,
      calls,
      inputTokens: i,
      outputTokens: o,
      cachedTokens: c,
      costUsd: usd,
      unpriced: un,
    });
    expect(await store.sumModelCalls({ workflow: 'alpha' })).toEqual([
      usage('m-a', 2, 150, 30, 10, 0.75, 0),
      usage('m-b', 1, 10, 5, 0, 0, 1),
    ]);
    expect(await store.sumModelCalls({ workflow: 'beta' })).toEqual([usage('m-a', 1, 1, 1, 1, 0.125, 0)]);
    expect(await store.sumModelCalls({})).toEqual([
      usage('m-a', 3, 151, 31, 11, 0.875, 0),
      usage('m-b', 1, 10, 5, 0, 0, 1),
      usage(null, 1, 7, 3, 0, 0, 1),
    ]);
    expect(await store.sumModelCalls({ workflow: 'nope' })).toEqual([]);
  });
});
