/**
 * A declared Checkpoint driven by explicit runOnce calls (no runAgent), on both backends: paused while a step
 * is in hand, that step commits and the next runOnce throws RunPausedError without running; a new
 * Checkpoint after resume carries on and complete() records the end. Counts side effects per key.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Checkpoint } from '../../lib/checkpoint/checkpoint';
import { stepKey } from '../../lib/checkpoint/keys';
import { RunCancelledError, RunPausedError } from '../../lib/errors';
import type { RunStore, Store } from '../../lib/store/contract';
import { backends, type StoreHandle } from '../support/backends';

const list = await backends();

describe.each(list)('a declared loop of explicit runOnce calls on $name', (backend) => {
  let h: StoreHandle;
  let store: Store & RunStore;
  beforeEach(async () => {
    h = await backend.open();
    store = h.store;
  });
  afterEach(() => h.close());

  async function loop(ran: Map<number, number>, pauseDuring?: { step: number; action: 'pause' | 'cancel' }) {
    const checkpoint = new Checkpoint(store, 'explicit', { workerId: 'me', workflow: 'hand-rolled', totalSteps: 5 });
    for (let step = 0; step < 5; step++) {
      await checkpoint.runOnce(
        stepKey('explicit', step),
        async () => {
          ran.set(step, (ran.get(step) ?? 0) + 1);
          if (pauseDuring?.step === step) await store.actOnRun('explicit', pauseDuring.action, 'operator:test');
          return step;
        },
        { step },
      );
    }
    await checkpoint.complete({ steps: 5 });
    return checkpoint;
  }

  it('stops after the step in hand when paused, and carries on after resume', async () => {
    const ran = new Map<number, number>();
    const stopped = loop(ran, { step: 2, action: 'pause' });
    await expect(stopped).rejects.toBeInstanceOf(RunPausedError);
    await expect(stopped).rejects.toMatchObject({ code: 'RUN_PAUSED', runId: 'explicit', status: 'paused' });
    expect([...ran]).toEqual([
      [0, 1],
      [1, 1],
      [2, 1],
    ]);
    expect(await store.countCommitted('explicit')).toBe(3);
    expect(await store.getRun('explicit')).toMatchObject({
      workflow: 'hand-rolled',
      totalSteps: 5,
      status: 'paused',
      owner: null,
    });

    await store.actOnRun('explicit', 'resume', 'operator:test');
    const done = await loop(ran);
    expect(done.runStatus).toBe('completed');
    expect([...ran].sort()).toEqual([
      [0, 1],
      [1, 1],
      [2, 1],
      [3, 1],
      [4, 1],
    ]);
    expect(await store.getRun('explicit')).toMatchObject({
      status: 'completed',
      outputJson: '{"steps":5}',
      attempts: 2,
    });
  });

  it('stops after the step in hand when cancelled, and stays cancelled', async () => {
    const ran = new Map<number, number>();
    await expect(loop(ran, { step: 0, action: 'cancel' })).rejects.toBeInstanceOf(RunCancelledError);
    await expect(loop(ran)).rejects.toBeInstanceOf(RunCancelledError);
    expect([...ran]).toEqual([[0, 1]]);
    expect(await store.getRun('explicit')).toMatchObject({ status: 'cancelled' });
  });
});
