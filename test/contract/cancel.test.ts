/**
 * Cancelling a running run lets go of its worker, on every backend. A run cancelled while its worker was dead
 * used to keep that worker as owner (shown on the run page and the runs list for ever); a paused one keeps
 * its owner on purpose, since the step in hand may still complete it.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { RunStore } from '../../lib/store/contract';
import { type StoreHandle, stepBackends } from '../support/backends';

const list = await stepBackends();

describe.each(list)('cancel on $label', (backend) => {
  let h: StoreHandle;
  let store: RunStore;

  beforeEach(async () => {
    h = await backend.open();
    store = h.store as unknown as RunStore;
    await store.registerWorker({ id: 'w1', host: 'h1', pid: 101 });
  });
  afterEach(() => h.close());

  async function running(id: string) {
    await store.createRun({ id, workflow: 'wf', inputJson: '{}', totalSteps: 3 });
    const taken = await store.claimRun({ workerId: 'w1', leaseMs: 60_000, workflows: ['wf'] });
    expect(taken).toMatchObject({ id, status: 'running', owner: 'w1' });
  }

  it('clears the owner and lease of a run whose worker died, and nothing the worker does revives it', async () => {
    await running('r1');
    expect(await store.markWorkerDead('w1', 'pid 101 is gone on h1')).toBe(0);
    const cancelled = await store.actOnRun('r1', 'cancel', 'ann');
    expect(cancelled).toMatchObject({ id: 'r1', status: 'cancelled', owner: null, leaseExpiresAt: null });
    expect(await store.getRun('r1')).toMatchObject({ status: 'cancelled', owner: null, leaseExpiresAt: null });
    expect((await store.listRuns({ owner: 'w1', claimTtlMs: 30_000 })).map((r) => r.id)).toEqual([]);

    // Had the worker been alive after all: it learns from the status, and can neither finish nor requeue the run.
    expect(await store.renewRunLease('r1', 'w1', 60_000)).toEqual({ held: false, status: 'cancelled' });
    expect(await store.finishRun('r1', 'w1', { status: 'completed', outputJson: '1' })).toBe(false);
    await store.releaseRun('r1', 'w1');
    expect(await store.getRun('r1')).toMatchObject({ status: 'cancelled', owner: null });
  });

  it('keeps the owner of a paused running run until its worker lets go', async () => {
    await running('r2');
    expect(await store.actOnRun('r2', 'pause', 'ann')).toMatchObject({ status: 'paused', owner: 'w1' });
    await store.releaseRun('r2', 'w1');
    expect(await store.getRun('r2')).toMatchObject({ status: 'paused', owner: null });
  });
});
