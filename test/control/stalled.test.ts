/**
 * Stalled runs (lib/control/stalled.ts), on every backend and on the store's own clock: a queued run no live
 * worker serves is named with its workflow; a run whose owner stopped heartbeating is named with the owner,
 * its last heartbeat and its takeover time (its run lease's end); neither is counted as running. The API's
 * run views carry the same judgement.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { getRun, listRuns, type RunsStore } from '../../lib/api/runs';
import { countStalled, readStallFacts, type StallSettings, stallOf } from '../../lib/control/stalled';
import type { WorkflowPublication } from '../../lib/store/contract';
import { backends, type StoreHandle } from '../support/backends';

const list = await backends();
const TTL = 30_000;
const publication = (name: string): WorkflowPublication => ({
  name,
  description: null,
  inputSchemaJson: '{}',
  totalSteps: 1,
  version: null,
});
const iso = (s: number) => new Date(Math.round(s) * 1000).toISOString().replace('.000Z', 'Z');

describe.each(list)('stalled runs on $name', (backend) => {
  let h: StoreHandle;
  let store: RunsStore;
  const settings = (): StallSettings => ({ now: h.clock.now(), runLeaseMs: 30_000, heartbeatMs: 1000 });

  beforeEach(async () => {
    h = await backend.open();
    store = h.store as RunsStore;
  });
  afterEach(() => h.close());

  it('names a queued run no live worker serves, until one that serves its workflow is up', async () => {
    await store.createRun({ id: 'q-1', workflow: 'alpha', inputJson: '{}', totalSteps: 1 });
    await store.createRun({ id: 'q-2', workflow: 'alpha', inputJson: '{}', totalSteps: 1 });
    await store.createRun({ id: 'q-3', workflow: 'beta', inputJson: '{}', totalSteps: 1 });
    const facts = await readStallFacts(store, settings());
    expect(stallOf((await store.getRun('q-1'))!, facts)).toEqual({
      kind: 'no-live-worker',
      workflow: 'alpha',
      message: 'no live worker for alpha',
    });
    expect(await countStalled(store, facts, { workflows: ['alpha', 'beta', 'gamma'] })).toEqual({
      noLiveWorker: 3,
      ownerSilent: 0,
      atLeast: false,
    });

    // A worker serving beta only: the alpha runs still wait, and say so in the API's views.
    await store.registerWorker({ id: 'w-beta', host: 'h', pid: 1 });
    await store.publishWorkflows('w-beta', [publication('beta')]);
    const later = await readStallFacts(store, settings());
    expect(await countStalled(store, later, { workflows: ['alpha', 'beta'] })).toEqual({
      noLiveWorker: 2,
      ownerSilent: 0,
      atLeast: false,
    });
    const page = await listRuns(store, {}, TTL, settings());
    expect(Object.fromEntries(page.runs.map((r) => [r.id, r.stall?.message ?? null]))).toEqual({
      'q-1': 'no live worker for alpha',
      'q-2': 'no live worker for alpha',
      'q-3': null,
    });
    expect((await getRun(store, 'q-1', TTL, settings())).run.stall).toEqual({
      kind: 'no-live-worker',
      workflow: 'alpha',
      message: 'no live worker for alpha',
    });
  });

  it('names a run whose owner went silent, with its last heartbeat and the time its run lease lets another worker take it', async () => {
    await store.registerWorker({ id: 'w-1', host: 'h', pid: 1 });
    await store.publishWorkflows('w-1', [publication('alpha')]);
    await store.createRun({ id: 'r-1', workflow: 'alpha', inputJson: '{}', totalSteps: 1 });
    await store.claimRun({ workerId: 'w-1', leaseMs: 30_000, workflows: ['alpha'], runId: 'r-1' });
    expect(stallOf((await store.getRun('r-1'))!, await readStallFacts(store, settings()))).toBeNull();

    // w-1 stops beating; w-2 (serving alpha) beats on. Past the 10 s a worker counts as live, w-1 is silent.
    await h.elapse(12_000);
    await store.registerWorker({ id: 'w-2', host: 'h', pid: 2 });
    await store.publishWorkflows('w-2', [publication('alpha')]);
    const facts = await readStallFacts(store, settings());
    const row = (await store.getRun('r-1'))!;
    const silentSince = (await store.listWorkers()).find((w) => w.id === 'w-1')!.heartbeatAt;
    expect(row.leaseExpiresAt).not.toBeNull();
    expect(stallOf(row, facts)).toEqual({
      kind: 'owner-silent',
      owner: 'w-1',
      silentSince,
      takeoverAt: row.leaseExpiresAt,
      message: `owner w-1 silent since ${iso(silentSince)}, will be taken over at ${iso(row.leaseExpiresAt!)}`,
    });
    // A list's summary has no lease: the takeover is a run lease after the last heartbeat (its last renewal).
    const summary = (await store.listRuns({ claimTtlMs: TTL })).find((r) => r.id === 'r-1')!;
    expect(stallOf(summary, facts)).toMatchObject({ kind: 'owner-silent', takeoverAt: silentSince + 30 });
    expect(await countStalled(store, facts, { workflows: ['alpha'] })).toEqual({
      noLiveWorker: 0,
      ownerSilent: 1,
      atLeast: false,
    });
    expect((await getRun(store, 'r-1', TTL, settings())).run.stall).toMatchObject({
      kind: 'owner-silent',
      owner: 'w-1',
      takeoverAt: row.leaseExpiresAt,
    });

    // Past the lease: the next poll takes it.
    await h.elapse(20_000);
    await store.heartbeatWorker('w-2');
    expect(stallOf(row, await readStallFacts(store, settings()))?.message).toBe(
      `owner w-1 silent since ${iso(silentSince)}, will be taken over at the next worker poll`,
    );
    // And once w-2 has taken it, nothing is stalled.
    const taken = await store.claimRun({ workerId: 'w-2', leaseMs: 30_000, workflows: ['alpha'] });
    expect(taken?.id).toBe('r-1');
    expect(stallOf((await store.getRun('r-1'))!, await readStallFacts(store, settings()))).toBeNull();
  });

  it("never calls a library loop's run stalled: it has no run lease and no worker takes it over", async () => {
    await store.beginLoopRun({
      runId: 'loop-1',
      workflow: 'nightly',
      owner: 'laptop',
      totalSteps: 3,
      inputJson: 'null',
    });
    await h.elapse(60_000);
    const facts = await readStallFacts(store, settings());
    expect(stallOf((await store.getRun('loop-1'))!, facts)).toBeNull();
    expect(await countStalled(store, facts, { workflows: [] })).toEqual({
      noLiveWorker: 0,
      ownerSilent: 0,
      atLeast: false,
    });
  });
});
