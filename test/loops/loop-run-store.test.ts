/**
 * The store's side of library loops, on both backends: a commit answers the run's status from its own
 * transaction and claims no next key for a paused or cancelled run; a loop's run is begun and ended by one
 * write each, refusing another workflow's id and a worker's live run; and the HTTP protocol says the same.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { begin, claim, commit, end } from '../../lib/api/protocol';
import type { RunStore, Store } from '../../lib/store/contract';
import { backends, type StoreHandle } from '../support/backends';
import { claimRequest, commitRequest } from '../support/requests';

const list = await backends();
const OPTIONS = { leaseMs: 60_000, claimTtlMs: 60_000 };
const start = { runId: 'run', workflow: 'nightly', totalSteps: 3, inputJson: '{"day":1}', owner: 'w1' };

describe.each(list)('library loop runs on $name', (backend) => {
  let h: StoreHandle;
  let store: Store & RunStore;
  beforeEach(async () => {
    h = await backend.open();
    store = h.store;
  });
  afterEach(() => h.close());

  it("a commit answers the run's status, and claims no next key once the run is paused or cancelled", async () => {
    const a = claimRequest('k0');
    await store.claim(a);
    expect(await store.commit(commitRequest(a))).toEqual({ next: null, runStatus: null });

    expect(await store.beginLoopRun(start)).toEqual({ status: 'running', created: true });
    const b = claimRequest('k1');
    await store.claim(b);
    const running = await store.commit(commitRequest(b, { next: claimRequest('k2') }));
    expect(running).toMatchObject({ runStatus: 'running', next: { kind: 'claimed' } });
    await store.releaseClaim({
      idemKey: 'k2',
      token: (await store.getClaim('k2', OPTIONS))!.token!,
      runId: 'run',
      step: 2,
      workerId: 'w1',
      durationMs: 0,
      error: null,
    });

    await store.actOnRun('run', 'pause', 'test');
    const c = claimRequest('k2');
    await store.claim(c);
    expect(await store.commit(commitRequest(c, { next: claimRequest('k3') }))).toEqual({
      next: null,
      runStatus: 'paused',
    });
    expect(await store.listClaims({ claimTtlMs: 60_000 })).toEqual([]);
    expect(await store.countCommitted('run')).toBe(3);
  });

  it("begins a loop's run once, restarts it, leaves a paused or cancelled one alone, and ends it", async () => {
    expect(await store.beginLoopRun(start)).toEqual({ status: 'running', created: true });
    expect(await store.getRun('run')).toMatchObject({
      workflow: 'nightly',
      status: 'running',
      totalSteps: 3,
      owner: 'w1',
      attempts: 1,
      inputJson: '{"day":1}',
      leaseExpiresAt: null,
    });
    expect(await store.beginLoopRun({ ...start, totalSteps: null, inputJson: 'null' })).toEqual({
      status: 'running',
      created: false,
    });
    expect(await store.getRun('run')).toMatchObject({ totalSteps: 3, attempts: 2, inputJson: '{"day":1}' });

    await expect(store.beginLoopRun({ ...start, workflow: 'other' })).rejects.toMatchObject({ code: 'INVALID_INPUT' });
    await store.actOnRun('run', 'pause', 'test');
    expect(await store.beginLoopRun(start)).toEqual({ status: 'paused', created: false });
    expect(await store.endLoopRun({ runId: 'run', owner: 'w1', outcome: 'stopped' })).toBe('paused');
    expect(await store.getRun('run')).toMatchObject({ status: 'paused', owner: null, attempts: 2 });

    await store.actOnRun('run', 'resume', 'test');
    expect(await store.beginLoopRun(start)).toEqual({ status: 'running', created: false });
    expect(await store.endLoopRun({ runId: 'run', owner: 'someone-else', outcome: 'completed' })).toBe('running');
    expect(await store.endLoopRun({ runId: 'run', owner: 'w1', outcome: 'failed', error: 'boom' })).toBe('failed');
    expect(await store.getRun('run')).toMatchObject({ status: 'failed', error: 'boom', owner: null });
    expect(await store.beginLoopRun(start)).toEqual({ status: 'running', created: false });
    expect(await store.endLoopRun({ runId: 'run', owner: 'w1', outcome: 'completed', outputJson: '{"ok":true}' })).toBe(
      'completed',
    );
    expect(await store.getRun('run')).toMatchObject({
      status: 'completed',
      error: null,
      outputJson: '{"ok":true}',
      owner: null,
    });

    const cancelled = { ...start, runId: 'run-c' };
    await store.beginLoopRun(cancelled);
    await store.actOnRun('run-c', 'cancel', 'test');
    expect(await store.beginLoopRun(cancelled)).toEqual({ status: 'cancelled', created: false });
    expect(await store.endLoopRun({ runId: 'nope', owner: 'w1', outcome: 'completed' })).toBeNull();
  });

  it('refuses a run a worker holds under a live run lease', async () => {
    await store.createRun({ id: 'engine-run', workflow: 'nightly', inputJson: '{}', totalSteps: 2 });
    expect(await store.claimRun({ workerId: 'worker-1', leaseMs: 60_000, workflows: ['nightly'] })).toMatchObject({
      id: 'engine-run',
    });
    await expect(store.beginLoopRun({ ...start, runId: 'engine-run' })).rejects.toMatchObject({ code: 'CONFLICT' });
    expect(await store.getRun('engine-run')).toMatchObject({ status: 'running', owner: 'worker-1', attempts: 1 });
  });

  it('over HTTP: begin declares the run, a commit answers its status, and a paused run gets no next claim', async () => {
    expect(await begin(store, 'py-run', { workflow: 'py-loop', totalSteps: 2, workerId: 'py' })).toEqual({
      run: { id: 'py-run', workflow: 'py-loop', totalSteps: 2, status: 'running', created: true },
    });
    const first = (await claim(store, { runId: 'py-run', key: 'py-run:0', step: 0, workerId: 'py' }, OPTIONS)) as {
      token: string;
    };
    await store.actOnRun('py-run', 'pause', 'test');
    expect(
      await commit(
        store,
        {
          runId: 'py-run',
          key: 'py-run:0',
          token: first.token,
          result: 0,
          step: 0,
          workerId: 'py',
          next: { key: 'py-run:1', step: 1 },
        },
        OPTIONS,
      ),
    ).toEqual({ key: 'py-run:0', committed: true, next: null, run: { status: 'paused' } });
    expect(await store.listClaims({ claimTtlMs: 60_000 })).toEqual([]);
    expect(await end(store, 'py-run', { outcome: 'stopped', workerId: 'py' })).toEqual({
      run: { id: 'py-run', status: 'paused' },
    });
    expect(await store.getRun('py-run')).toMatchObject({
      status: 'paused',
      owner: null,
      workflow: 'py-loop',
      totalSteps: 2,
    });
    await expect(end(store, 'nope', { outcome: 'completed' })).rejects.toMatchObject({ code: 'NOT_FOUND' });
  });
});
