/**
 * What a queued run waits for (lib/control/queued.ts), on every backend and the store's own clock: no worker at
 * all, none that serves its workflow, every slot of the ones that do taken (by which runs), or a slot free. The
 * API's list and run views carry the same reason as `queuedReason`, and a real Worker records its slots.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { getRun, listRuns, type RunsStore } from '../../lib/api/runs';
import { queuedReasonOf } from '../../lib/control/queued';
import { readStallFacts, type StallSettings } from '../../lib/control/stalled';
import { Worker } from '../../lib/engine/worker';
import { WorkflowRegistry } from '../../lib/engine/workflow';
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

describe.each(list)('a queued run says what it waits for on $name', (backend) => {
  let h: StoreHandle;
  let store: RunsStore;
  const settings = (): StallSettings => ({ now: h.clock.now(), runLeaseMs: 30_000, heartbeatMs: 1000 });
  const reason = async (id: string) =>
    queuedReasonOf(store, (await store.getRun(id))!, await readStallFacts(store, settings()));

  beforeEach(async () => {
    h = await backend.open();
    store = h.store as RunsStore;
  });
  afterEach(() => h.close());

  it('no worker, none serving it, every slot busy with the runs named, then a slot free', async () => {
    await store.createRun({ id: 'q', workflow: 'alpha', inputJson: '{}', totalSteps: 1 });
    expect(await reason('q')).toEqual({
      kind: 'no-worker',
      message: 'no worker is alive: start one (npx waybill worker) and it takes this run',
    });

    await store.registerWorker({ id: 'w-beta', host: 'h', pid: 1, slots: 2 });
    await store.publishWorkflows('w-beta', [publication('beta')]);
    expect(await reason('q')).toEqual({
      kind: 'not-served',
      workflow: 'alpha',
      message: 'no live worker serves alpha (worker w-beta serves other workflows)',
    });

    // One slot, held by an older run of alpha: q waits for it, and the reason says whose it is.
    await store.registerWorker({ id: 'w-1', host: 'h', pid: 2, slots: 1 });
    await store.publishWorkflows('w-1', [publication('alpha')]);
    await store.createRun({ id: 'busy', workflow: 'alpha', inputJson: '{}', totalSteps: 1 });
    expect((await store.claimRun({ workerId: 'w-1', leaseMs: 30_000, workflows: ['alpha'], runId: 'busy' }))?.id).toBe(
      'busy',
    );
    const busy = {
      kind: 'slots-busy',
      workflow: 'alpha',
      busy: 1,
      slots: 1,
      workers: [{ id: 'w-1', slots: 1, runs: ['busy'] }],
      message: 'waiting for a free slot: 1 of 1 busy on worker w-1 with run busy',
    };
    expect(await reason('q')).toEqual(busy);

    // The API's views carry the same reason; a running run has none.
    const page = await listRuns(store, {}, TTL, settings());
    expect(Object.fromEntries(page.runs.map((r) => [r.id, r.queuedReason]))).toEqual({ q: busy, busy: null });
    expect((await getRun(store, 'q', TTL, settings())).run.queuedReason).toEqual(busy);

    // A second worker for alpha with two slots: one is free, and the run is taken at that worker's next poll.
    await store.registerWorker({ id: 'w-2', host: 'h', pid: 3, slots: 2 });
    await store.publishWorkflows('w-2', [publication('alpha')]);
    expect(await reason('q')).toMatchObject({
      kind: 'slot-free',
      busy: 1,
      slots: 3,
      message:
        'a slot is free on worker w-2 (0 of 2 busy): at its next poll it takes the queued run of highest priority (the oldest among equals)',
    });

    // Both workers stop beating: past the live window, no worker is alive.
    await h.elapse(60_000);
    expect((await reason('q'))?.kind).toBe('no-worker');
  });

  it('a real worker records its --concurrency as its slots', async () => {
    const worker = new Worker({
      store,
      registry: new WorkflowRegistry([]),
      concurrency: 3,
      pollMs: 10,
      heartbeatMs: 50,
      clock: h.clock,
    });
    const running = worker.run();
    try {
      for (let i = 0; i < 500 && (await store.listWorkers()).length === 0; i++) await h.elapse(10);
      expect((await store.listWorkers()).map((w) => [w.id, w.slots])).toEqual([[worker.id, 3]]);
    } finally {
      worker.stop();
      await h.settle(running);
    }
  });
});
