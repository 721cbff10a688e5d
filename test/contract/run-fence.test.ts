/**
 * A run is held by one execution: the run's `attempts` when claimRun handed it out fences that execution's
 * renewals, finish and release, on every backend. Two executions under one worker id (a worker restarted under
 * its id while the old process was only stalled) cannot both keep the run, and the older cannot re-queue it.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { RunStore } from '../../lib/store/types';
import { stepBackends, type StoreHandle } from '../support/backends';

const list = await stepBackends();

describe.each(list)('run fence on $label', (backend) => {
  let h: StoreHandle;
  let store: RunStore;

  beforeEach(async () => {
    h = await backend.open();
    store = h.store as unknown as RunStore;
    await store.createRun({ id: 'r1', workflow: 'wf', inputJson: '{}', totalSteps: 3 });
  });
  afterEach(() => h.close());

  it('a run in hand is never handed out again, even to its own worker with the lease passed', async () => {
    expect(await store.claimRun({ workerId: 'w1', leaseMs: 200, workflows: ['wf'] })).toMatchObject({
      id: 'r1',
      attempts: 1,
    });
    await h.elapse(600);
    expect(await store.claimRun({ workerId: 'w1', leaseMs: 200, workflows: ['wf'], holding: ['r1'] })).toBeNull();
    // Its own renewal, late as it is, keeps it: nobody took it meanwhile.
    expect(await store.renewRunLease('r1', 'w1', 60_000, 1)).toEqual({ held: true, status: 'running' });
    expect(await store.getRun('r1')).toMatchObject({ owner: 'w1', attempts: 1 });
  });

  it('a second take under the same worker id fences the first execution out of renew, finish and release', async () => {
    expect(await store.claimRun({ workerId: 'w1', leaseMs: 200, workflows: ['wf'] })).toMatchObject({ attempts: 1 });
    await h.elapse(600);
    expect(await store.claimRun({ workerId: 'w1', leaseMs: 60_000, workflows: ['wf'] })).toMatchObject({
      id: 'r1',
      attempts: 2,
    });

    expect(await store.renewRunLease('r1', 'w1', 60_000, 1)).toEqual({ held: false, status: 'running' });
    await store.releaseRun('r1', 'w1', 1);
    expect(await store.getRun('r1')).toMatchObject({ status: 'running', owner: 'w1', attempts: 2 });
    expect(await store.finishRun('r1', 'w1', { status: 'failed', error: 'old copy' }, 1)).toBe(false);
    expect(await store.getRun('r1')).toMatchObject({ status: 'running', error: null });

    expect(await store.renewRunLease('r1', 'w1', 60_000, 2)).toEqual({ held: true, status: 'running' });
    expect(await store.finishRun('r1', 'w1', { status: 'completed', outputJson: '1' }, 2)).toBe(true);
    expect(await store.getRun('r1')).toMatchObject({ status: 'completed', owner: null });
  });

  it('runId takes only that run', async () => {
    await store.createRun({ id: 'r2', workflow: 'wf', inputJson: '{}', totalSteps: 3 });
    expect(await store.claimRun({ workerId: 'w1', leaseMs: 60_000, workflows: ['wf'], runId: 'r2' })).toMatchObject({
      id: 'r2',
    });
    expect(await store.claimRun({ workerId: 'w1', leaseMs: 60_000, workflows: ['wf'], runId: 'r2' })).toBeNull();
    expect(await store.getRun('r1')).toMatchObject({ status: 'queued' });
  });
});
