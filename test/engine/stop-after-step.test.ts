/**
 * Pause and cancel let the step in hand finish: its side effect runs once and commits, the next step is not
 * started, and nothing is recorded as failed. A real `waybill worker` process on every backend, caught inside
 * a step's 1.5 s latency; counted from the outbox (every execution, refused duplicates included) and the store.
 */
import { describe, expect, it } from 'vitest';
import { makeTarget, type Target, targetKinds } from '../support/targets';
import { tempDir } from '../support/tmp';
import { executionsByKey, startWorker, until } from './support';

const kinds = await targetKinds('stop-after-step tests');

/** The run's outbox is outbox.jsonl in the worker's data directory (WAYBILL_DATA_DIR). */
async function caughtInStep(target: Target, runId: string) {
  const store = await target.store();
  await store.createRun({
    id: runId,
    workflow: 'notify',
    inputJson: JSON.stringify({ count: 4, outbox: 'outbox.jsonl', latencyMs: 1500 }),
    totalSteps: 4,
  });
  // Step 1 freshly claimed: the worker is inside its latency, well before it delivers.
  await until('step 1 in hand', async () =>
    (await store.listClaims({ runId, claimTtlMs: 30_000 })).find(
      (c) => c.step === 1 && c.workerId && Date.now() / 1000 - c.claimedAt < 0.5,
    ),
  );
  return store;
}

describe.each(kinds)('stopping a run on %s', (kind) => {
  it('pause: the step in hand commits once, the next is not started, no failed event; resume finishes the rest once', async () => {
    const target = await makeTarget(kind);
    const data = tempDir('waybill-outbox-');
    const outbox = data.file('outbox.jsonl');
    const worker = startWorker(target, ['--id', 'pw'], { WAYBILL_HEARTBEAT_MS: '100', WAYBILL_DATA_DIR: data.path });
    const store = await caughtInStep(target, 'p');
    await store.actOnRun('p', 'pause', 'ann');
    await until('the worker to let go', async () =>
      worker.logs.find((l) => l.runId === 'p' && /^run (stopped|handed back)/.test(l.msg)),
    );

    expect(await store.getRun('p')).toMatchObject({ status: 'paused', owner: null });
    expect((await store.listCommitted('p')).map((c) => c.step)).toEqual([0, 1]);
    expect(Object.fromEntries(executionsByKey(outbox))).toEqual({ 'p:step:0': 1, 'p:step:1': 1 });
    expect(await store.listClaims({ runId: 'p', claimTtlMs: 30_000 })).toEqual([]);
    expect((await store.listEvents('p')).map((e) => e.outcome)).toEqual(['operator']);

    await store.actOnRun('p', 'resume', 'ann');
    await until('the run to complete', async () => (await store.getRun('p'))?.status === 'completed');
    expect(Object.fromEntries(executionsByKey(outbox))).toEqual({
      'p:step:0': 1,
      'p:step:1': 1,
      'p:step:2': 1,
      'p:step:3': 1,
    });
    expect((await store.listEvents('p')).filter((e) => e.outcome !== 'operator')).toEqual([]);
    expect(await store.loadProgress('p')).toMatchObject({ step: 4, executed: 4, awaited: 0 });
  }, 120_000);

  it('cancel: the step in hand commits once, the next is not started, no failed event', async () => {
    const target = await makeTarget(kind);
    const data = tempDir('waybill-outbox-');
    const outbox = data.file('outbox.jsonl');
    const worker = startWorker(target, ['--id', 'cw'], { WAYBILL_HEARTBEAT_MS: '100', WAYBILL_DATA_DIR: data.path });
    const store = await caughtInStep(target, 'c');
    await store.actOnRun('c', 'cancel', 'ann');
    await until('the worker to let go', async () =>
      worker.logs.find((l) => l.runId === 'c' && /^run (stopped|handed back)/.test(l.msg)),
    );

    expect(await store.getRun('c')).toMatchObject({ status: 'cancelled', owner: null });
    expect((await store.listCommitted('c')).map((c) => c.step)).toEqual([0, 1]);
    expect(Object.fromEntries(executionsByKey(outbox))).toEqual({ 'c:step:0': 1, 'c:step:1': 1 });
    expect(await store.listClaims({ runId: 'c', claimTtlMs: 30_000 })).toEqual([]);
    expect((await store.listEvents('c')).map((e) => e.outcome)).toEqual(['operator']);
  }, 120_000);
});
