/**
 * Recorded model calls on every backend (contract/model-calls.ts recordModelUsage): a report is stored complete
 * under its key and counted by the ledger; reported again under the same key (a step executed again) it is
 * overwritten, never counted twice; a key a gateway call holds is IdempotencyKeyReuseError and nothing changes.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { IdempotencyKeyReuseError } from '../../lib/errors';
import { runUsage } from '../../lib/gateway/ledger';
import type { RecordedModelUsage, Store } from '../../lib/store/contract';
import { backends, type StoreHandle } from '../support/backends';

const list = await backends();

const report = (over: Partial<RecordedModelUsage> = {}): RecordedModelUsage => ({
  idemKey: 'r1:step:0:usage:0',
  runId: 'r1',
  step: 0,
  model: 'm',
  inputTokens: 100,
  outputTokens: 20,
  cachedTokens: 40,
  costUsd: 0.25,
  ...over,
});

describe.each(list)('recorded model usage on $name', (backend) => {
  let h: StoreHandle;
  let store: Store;

  beforeEach(async () => {
    h = await backend.open();
    store = h.store;
  });
  afterEach(() => h.close());

  it('stores a report complete, with api recorded, and the ledger counts it', async () => {
    await store.recordModelUsage(report());
    await store.recordModelUsage(report({ idemKey: 'r1:step:0:usage:1', model: 'n', costUsd: null }));
    const row = await store.getModelCall('r1:step:0:usage:0');
    expect(row).toMatchObject({
      runId: 'r1',
      step: 0,
      api: 'recorded',
      state: 'complete',
      model: 'm',
      inputTokens: 100,
      outputTokens: 20,
      cachedTokens: 40,
      costUsd: 0.25,
      leaseToken: null,
      body: null,
    });
    expect(row?.completedAt).toBe(row?.startedAt);
    const usage = await runUsage(store, 'r1');
    expect(usage).toMatchObject({ calls: 2, inputTokens: 200, outputTokens: 40, cachedTokens: 80, costUsd: 0.25 });
    expect(usage.unpriced).toBe(1);
    expect(usage.bySteps.map((s) => [s.step, s.usage.calls])).toEqual([[0, 2]]);
  });

  it('overwrites a report made again under its key, so the ledger counts it once', async () => {
    await store.recordModelUsage(report());
    const first = await store.getModelCall('r1:step:0:usage:0');
    await store.recordModelUsage(report({ inputTokens: 7, outputTokens: 3, cachedTokens: 0, costUsd: 0.5 }));
    const again = await store.getModelCall('r1:step:0:usage:0');
    expect(again?.id).toBe(first?.id);
    expect(await runUsage(store, 'r1')).toMatchObject({
      calls: 1,
      inputTokens: 7,
      outputTokens: 3,
      cachedTokens: 0,
      costUsd: 0.5,
    });
  });

  it('refuses a key a gateway call holds and leaves the call as it was', async () => {
    const call = await store.beginModelCall({
      idemKey: 'r1:step:0:usage:0',
      runId: 'r1',
      step: 0,
      api: 'openai.chat',
      model: 'g',
      fingerprint: 'f1',
      framing: 'json',
      leaseMs: 1000,
    });
    if (call.kind !== 'lead') throw new Error('expected to lead');
    await expect(store.recordModelUsage(report())).rejects.toBeInstanceOf(IdempotencyKeyReuseError);
    expect(await store.getModelCall('r1:step:0:usage:0')).toMatchObject({
      api: 'openai.chat',
      model: 'g',
      state: 'pending',
      inputTokens: null,
    });
    // And a gateway call asked under a recorded call's key is refused the same way.
    await store.recordModelUsage(report({ idemKey: 'r1:step:1:usage:0', step: 1 }));
    await expect(
      store.beginModelCall({
        idemKey: 'r1:step:1:usage:0',
        runId: 'r1',
        step: 1,
        api: 'openai.chat',
        model: 'g',
        fingerprint: 'f1',
        framing: 'json',
        leaseMs: 1000,
      }),
    ).rejects.toBeInstanceOf(IdempotencyKeyReuseError);
  });
});
