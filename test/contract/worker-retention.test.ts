/**
 * The workers table follows the live fleet (#17): rows of workers stopped or silent past the retention go, on
 * every backend, by the store's clock, except a row a running run still names as owner; the reads a worker or a
 * request makes often are filtered; a worker prunes at start and then on its interval, and a worker whose own row
 * was pruned while it was silent writes it again at its next beat. Rows are counted, every time.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { Worker } from '../../lib/engine/worker';
import { defineWorkflow, WorkflowRegistry } from '../../lib/engine/workflow';
import type { RunStore, Store } from '../../lib/store/contract';
import { backends, type StoreHandle } from '../support/backends';

const list = await backends();

const RETENTION_MS = 60_000;
const registry = new WorkflowRegistry([defineWorkflow({ name: 'wf', input: z.object({}), run: async () => 'done' })]);

describe.each(list)('worker retention on $name', (backend) => {
  let h: StoreHandle;
  let store: Store & RunStore;

  beforeEach(async () => {
    h = await backend.open();
    store = h.store;
  });
  afterEach(() => h.close());

  const ids = async (filter?: Parameters<RunStore['listWorkers']>[0]) =>
    (await store.listWorkers(filter)).map((w) => w.id).sort();

  it('prunes workers stopped or silent past the retention, keeping the live, the recent and a running run’s owner', async () => {
    const register = (id: string) => store.registerWorker({ id, host: 'h', pid: 1 });
    for (const id of ['stopped-old', 'silent-old', 'owner-old', 'live']) await register(id);
    await store.createRun({ id: 'r1', workflow: 'wf', inputJson: '{}', totalSteps: null });
    expect(await store.claimRun({ workerId: 'owner-old', leaseMs: 600_000, workflows: ['wf'] })).toMatchObject({
      id: 'r1',
    });
    await store.stopWorker('stopped-old');
    await store.stopWorker('owner-old');

    await h.elapse(RETENTION_MS + 5_000);
    await store.heartbeatWorker('live');
    await register('stopped-recent');
    await store.stopWorker('stopped-recent');
    await register('fresh');
    expect((await store.listWorkers()).length).toBe(6);

    expect(await store.pruneWorkers(RETENTION_MS)).toBe(2);
    expect(await ids()).toEqual(['fresh', 'live', 'owner-old', 'stopped-recent']);
    // Nothing more to prune: the same call again removes nothing.
    expect(await store.pruneWorkers(RETENTION_MS)).toBe(0);
    expect((await store.listWorkers()).length).toBe(4);

    // Once its run is no longer running, the owner's row goes at the next prune.
    await store.actOnRun('r1', 'cancel', 'test');
    expect(await store.pruneWorkers(RETENTION_MS)).toBe(1);
    expect(await ids()).toEqual(['fresh', 'live', 'stopped-recent']);
  });

  it('reads only what is asked: the not stopped, with or without a running run’s stopped owner, by id, at most N', async () => {
    for (const id of ['a', 'b', 'c', 'd']) {
      await store.registerWorker({ id, host: 'h', pid: 1 });
      await h.elapse(1_000);
    }
    await store.createRun({ id: 'r1', workflow: 'wf', inputJson: '{}', totalSteps: null });
    await store.claimRun({ workerId: 'b', leaseMs: 600_000, workflows: ['wf'] });
    await store.stopWorker('b');
    await store.stopWorker('c');

    expect(await ids({ notStopped: true })).toEqual(['a', 'd']);
    expect(await ids({ notStopped: true, orOwningRunning: true })).toEqual(['a', 'b', 'd']);
    expect(await ids({ ids: ['c', 'd', 'nobody'] })).toEqual(['c', 'd']);
    expect(await ids({ ids: [] })).toEqual([]);
    // Live first, then the most recently started: d, a, then c (started after b), b.
    expect((await store.listWorkers()).map((w) => w.id)).toEqual(['d', 'a', 'c', 'b']);
    expect((await store.listWorkers({ limit: 3 })).map((w) => w.id)).toEqual(['d', 'a', 'c']);
  });

  it('a worker prunes at start and on its interval, and writes its own row again when it was pruned', async () => {
    await store.registerWorker({ id: 'gone-1', host: 'h', pid: 1 });
    await store.stopWorker('gone-1');
    await h.elapse(RETENTION_MS + 5_000);

    const w = new Worker({
      store,
      registry,
      id: 'me',
      pollMs: 20,
      heartbeatMs: 100,
      workerRetentionMs: RETENTION_MS,
      clock: h.clock,
    });
    const running = w.run();
    try {
      await until(async () => (await ids()).join() === 'me', 'the start prune');
      expect(await ids()).toEqual(['me']);

      // A second stopped worker: the first interval (the retention, here) that finds it past the retention takes it.
      await store.registerWorker({ id: 'gone-2', host: 'h', pid: 1 });
      await store.stopWorker('gone-2');
      expect((await store.listWorkers()).length).toBe(2);
      await h.elapse(2 * RETENTION_MS + 5_000);
      await until(async () => (await ids()).join() === 'me', 'the interval prune');
      expect((await store.listWorkers()).length).toBe(1);

      // Our own row pruned (as while this process was stopped for a day): the next beat writes it again.
      await h.exec(`DELETE FROM workers WHERE id = 'me'`);
      expect((await store.listWorkers()).length).toBe(0);
      await until(async () => (await ids()).join() === 'me', 'the worker registering again');
      expect(await store.listWorkers()).toEqual([expect.objectContaining({ id: 'me', stoppedAt: null })]);
    } finally {
      w.stop();
      await h.settle(running);
    }
  });

  /** Moves the store's clock a beat at a time (on PostgreSQL, real time passes too) until probe holds. */
  async function until(probe: () => Promise<boolean>, what: string): Promise<void> {
    for (let i = 0; i < 300; i++) {
      if (await probe()) return;
      await h.elapse(100);
    }
    throw new Error(`timed out waiting for ${what}`);
  }
});
