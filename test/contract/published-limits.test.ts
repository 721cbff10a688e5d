/**
 * Issue 27: two deployments of one workflow declaring different limits, on one store. The pick holds runs back by
 * the workflow's latest publication (the newest worker to start), whatever limits the picking worker declares
 * itself, and a held run's reason counts against that same limit; a worker's own declaration counts only for a
 * workflow the store has no publication of. Two registries, published as `waybill worker` publishes them, picked
 * with each one's own limits as its Worker passes them.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { queuedReasonOf } from '../../lib/control/queued';
import { readStallFacts } from '../../lib/control/stalled';
import { publicationsOf } from '../../lib/engine/publish';
import { defineWorkflow, WorkflowRegistry } from '../../lib/engine/workflow';
import type { Store } from '../../lib/store/contract';
import { backends, type StoreHandle } from '../support/backends';

const list = await backends();
const LEASE = 30_000;

/** `acme-calls` as one deployment declares it: at most `limit` running per customer (none: no limit). */
const deployment = (limit?: number) =>
  new WorkflowRegistry([
    defineWorkflow({
      name: 'acme-calls',
      input: z.object({ customer: z.string() }),
      ...(limit === undefined ? {} : { concurrency: { limit, key: 'customer' } }),
      run: async () => {},
    }),
  ]);

describe.each(list)('limits declared by two deployments on $name', (backend) => {
  let h: StoreHandle;
  let store: Store;
  let n = 0;
  const queue = () =>
    store.createRun({ id: `acme-${++n}`, workflow: 'acme-calls', inputJson: '{"customer":"acme"}', totalSteps: 1 });
  /** A worker's start: its row, then its workflows published (the newest publication of a name wins). */
  const start = async (id: string, registry: WorkflowRegistry) => {
    await store.registerWorker({ id, host: 'h', pid: 1, slots: 8 });
    await store.publishWorkflows(id, publicationsOf(registry));
  };
  /** One pick by `id`, with its registry's own limits, as its Worker asks. */
  const pick = async (id: string, registry: WorkflowRegistry) =>
    (await store.claimRun({ workerId: id, leaseMs: LEASE, workflows: registry.names(), limits: registry.limits() }))
      ?.id ?? null;
  const reason = async (id: string) =>
    queuedReasonOf(
      store,
      (await store.getRun(id))!,
      await readStallFacts(store, { now: h.clock.now(), runLeaseMs: LEASE, heartbeatMs: 1000 }),
    );

  beforeEach(async () => {
    h = await backend.open();
    store = h.store;
    n = 0;
  });
  afterEach(() => h.close());

  it('holds runs by the newest publication, for every worker, and says so by the same limit', async () => {
    const older = deployment(3);
    const newer = deployment(1);
    await start('w-old', older);
    await start('w-new', newer);
    for (let i = 0; i < 3; i++) await queue();

    // The old worker declares 3, but the store's limit is the new deployment's 1: it takes one, then nothing.
    expect(await pick('w-old', older)).toBe('acme-1');
    expect(await pick('w-old', older)).toBeNull();
    expect(await pick('w-new', newer)).toBeNull();
    expect(await reason('acme-2')).toMatchObject({
      kind: 'held',
      limit: 'concurrency',
      key: 'acme',
      message: '1 of 1 runs for key acme are running',
    });

    // The old deployment starts again: its publication is now the newest, and its 3 the limit of both.
    await start('w-old', older);
    expect(await pick('w-new', newer)).toBe('acme-2');
    expect(await pick('w-new', newer)).toBe('acme-3');
    await queue();
    expect(await pick('w-new', newer)).toBeNull();
    expect(await reason('acme-4')).toMatchObject({ kind: 'held', message: '3 of 3 runs for key acme are running' });
  });

  it('holds nothing when the newest publication declares no limit, whatever a worker declares', async () => {
    const limited = deployment(1);
    await start('w-limited', limited);
    await start('w-free', deployment());
    for (let i = 0; i < 2; i++) await queue();
    expect(await pick('w-limited', limited)).toBe('acme-1');
    expect(await pick('w-limited', limited)).toBe('acme-2');
    expect((await reason('acme-2'))?.kind).not.toBe('held');
  });

  it("holds by a worker's own declaration when the store has no publication of the workflow", async () => {
    const own = deployment(1);
    for (let i = 0; i < 2; i++) await queue();
    expect(await pick('w-library', own)).toBe('acme-1');
    expect(await pick('w-library', own)).toBeNull();
    // A worker declaring nothing is held by nothing.
    expect(await pick('w-other', deployment())).toBe('acme-2');
  });
});
