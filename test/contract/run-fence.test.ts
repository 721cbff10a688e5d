/**
 * A run is held by one execution: the run's `attempts` when claimRun handed it out fences that execution's
 * renewals, finish and release, on every backend. Two executions under one worker id (a worker restarted under
 * its id while the old process was only stalled) cannot both keep the run, and the older cannot re-queue it.
 * Its step claims too (ClaimRequest.fence, the engine's Checkpoint): once the run was rerun, taken over or
 * handed back, the old execution claims no further step, so it cannot commit one into the rerun.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Checkpoint } from '../../lib/checkpoint/checkpoint';
import { LeaseLostError } from '../../lib/errors';
import type { RewindStore, RunStore, Store } from '../../lib/store/contract';
import { type StoreHandle, stepBackends } from '../support/backends';
import { claimRequest, commitRequest } from '../support/requests';

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

  describe('step claims', () => {
    const rewind = () => h.store as Store & RunStore & RewindStore;
    const rerun = (input: object) =>
      rewind().rerunRun({
        runId: 'r1',
        fromStep: 1,
        inputJson: JSON.stringify(input),
        totalSteps: 3,
        actor: 'alice (operator)',
        reason: null,
        claimTtlMs: 60_000,
      });
    /** A step as the engine runs it: the side effect records the run's input at that moment. */
    const step = (cp: Checkpoint, n: number, effects: string[], input: { v: number }) =>
      cp.runOnce(`r1:step:${n}`, () => effects.push(`${cp.workerId} step ${n} v${input.v}`) && input.v, { step: n });

    it('pause, then rerun at once with an edited input: the old execution claims no step of the rerun', async () => {
      const effects: string[] = [];
      const taken = await store.claimRun({ workerId: 'w1', leaseMs: 60_000, workflows: ['wf'] });
      const old = new Checkpoint(h.store, 'r1', { workerId: 'w1', fence: taken!.attempts, clock: h.clock });
      await step(old, 0, effects, { v: 1 });
      // Paused and rerun from step 1 before the old execution has heard of either: it is between steps.
      await store.actOnRun('r1', 'pause', 'alice (operator)');
      await rerun({ v: 2 });

      await expect(step(old, 1, effects, { v: 1 })).rejects.toThrow(LeaseLostError);
      expect(await h.store.listClaims({ claimTtlMs: 60_000 })).toEqual([]);

      const next = await store.claimRun({ workerId: 'w2', leaseMs: 60_000, workflows: ['wf'] });
      expect(next).toMatchObject({ attempts: 2, inputJson: '{"v":2}' });
      const current = new Checkpoint(h.store, 'r1', { workerId: 'w2', fence: next!.attempts, clock: h.clock });
      expect(await step(current, 1, effects, { v: 2 })).toEqual({ result: 2, status: 'executed' });
      expect(effects).toEqual(['w1 step 0 v1', 'w2 step 1 v2']);
      const rows = await h.store.listCommitted('r1');
      expect(rows.map((r) => [r.step, r.workerId, r.resultJson])).toEqual([
        [0, 'w1', '1'],
        [1, 'w2', '2'],
      ]);
    });

    it('an old holder stalled mid-step past its lease: its commit and its next claim are refused after the rerun', async () => {
      await store.claimRun({ workerId: 'w1', leaseMs: 60_000, workflows: ['wf'] });
      const inHand = claimRequest('r1:step:1', { runId: 'r1', step: 1, leaseMs: 200, fence: 1 });
      expect(await h.store.claim(inHand)).toMatchObject({ kind: 'claimed' });
      await store.actOnRun('r1', 'pause', 'alice (operator)');
      await h.elapse(600);
      await rerun({ v: 2 });

      const next = claimRequest('r1:step:2', { runId: 'r1', step: 2, fence: 1 });
      await expect(h.store.commit(commitRequest(inHand, { next }))).rejects.toThrow(LeaseLostError);
      await expect(h.store.claim(next)).rejects.toThrow(LeaseLostError);
      expect(await h.store.listClaims({ claimTtlMs: 60_000 })).toEqual([]);
      expect(await h.store.countCommitted('r1')).toBe(0);
      // The rerun's execution claims the same keys.
      await store.claimRun({ workerId: 'w2', leaseMs: 60_000, workflows: ['wf'] });
      const mine = claimRequest('r1:step:1', { runId: 'r1', workerId: 'w2', step: 1, fence: 2 });
      expect(await h.store.claim(mine)).toMatchObject({ kind: 'claimed' });
    });

    it('a takeover lets the old holder commit its step in hand, but claim nothing after it, not even ahead', async () => {
      await store.claimRun({ workerId: 'w1', leaseMs: 200, workflows: ['wf'] });
      const inHand = claimRequest('r1:step:0', { runId: 'r1', step: 0, fence: 1 });
      await h.store.claim(inHand);
      await h.elapse(600);
      expect(await store.claimRun({ workerId: 'w2', leaseMs: 60_000, workflows: ['wf'] })).toMatchObject({
        attempts: 2,
      });
      const next = claimRequest('r1:step:1', { runId: 'r1', step: 1, fence: 1 });
      expect(await h.store.commit(commitRequest(inHand, { next }))).toMatchObject({ next: null });
      await expect(h.store.claim(next)).rejects.toThrow(LeaseLostError);
      expect(await h.store.countCommitted('r1')).toBe(1);
      expect(await h.store.listClaims({ claimTtlMs: 60_000 })).toEqual([]);
    });
  });
});
