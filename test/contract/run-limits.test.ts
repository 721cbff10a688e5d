/**
 * Issue 27, concurrency keys, rate limits and priority at the run pick, on every backend: a higher priority is
 * taken first; a workflow's concurrency limit holds a run back while its key has that many running (a parked
 * run holds no place) and lets it go when one ends; a rate limit holds a first start until the window has
 * room, never a resumed run; stores racing for one key's last place give it to exactly one; and the key the
 * store computes from the input is limitKeyOf's. Held runs say why (lib/control/queued.ts).
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { queuedReasonOf } from '../../lib/control/queued';
import { readStallFacts } from '../../lib/control/stalled';
import { limitKeyOf, type RunLimits } from '../../lib/domain/run-limits';
import type { Store } from '../../lib/store/contract';
import { backends, type StoreHandle } from '../support/backends';

const list = await backends();
const LEASE = 30_000;

describe.each(list)('the run pick under limits on $name', (backend) => {
  let h: StoreHandle;
  let store: Store;
  let n = 0;
  const queue = (workflow: string, input: unknown, priority?: number) =>
    store.createRun({
      id: `${workflow}-${++n}`,
      workflow,
      inputJson: JSON.stringify(input),
      totalSteps: 1,
      ...(priority === undefined ? {} : { priority }),
    });
  const pick = async (workflows: string[], limits?: Record<string, RunLimits>, workerId = 'w-1') =>
    (await store.claimRun({ workerId, leaseMs: LEASE, workflows, limits }))?.id ?? null;
  const picks = async (count: number, workflows: string[], limits?: Record<string, RunLimits>) => {
    const taken: (string | null)[] = [];
    for (let i = 0; i < count; i++) taken.push(await pick(workflows, limits));
    return taken;
  };

  beforeEach(async () => {
    h = await backend.open();
    store = h.store;
    n = 0;
  });
  afterEach(() => h.close());

  it('takes the highest priority first, then the oldest', async () => {
    await queue('wf', {}, 0);
    await queue('wf', {}, 5);
    await queue('wf', {}, -1);
    await queue('wf', {}, 5);
    expect((await store.getRun('wf-2'))?.priority).toBe(5);
    expect(await picks(5, ['wf'])).toEqual(['wf-2', 'wf-4', 'wf-1', 'wf-3', null]);
  });

  it('holds a run while its key has the limit running, and lets it go when one ends', async () => {
    const limits = { wf: { concurrency: { limit: 2, key: 'customer' } } };
    for (const customer of ['acme', 'acme', 'acme', 'beta']) await queue('wf', { customer });
    // acme's third waits; beta has a key of its own.
    expect(await picks(4, ['wf'], limits)).toEqual(['wf-1', 'wf-2', 'wf-4', null]);
    // Without the limits (a worker that does not declare them) nothing is held.
    expect(await pick(['wf'])).toBe('wf-3');
  });

  it('frees a place when a run ends or parks, and counts a whole workflow without a key', async () => {
    const limits = { wf: { concurrency: { limit: 1, key: null } } };
    await queue('wf', { customer: 'acme' });
    await queue('wf', { customer: 'beta' });
    await queue('wf', {});
    expect(await picks(2, ['wf'], limits)).toEqual(['wf-1', null]);
    expect(await store.finishRun('wf-1', 'w-1', { status: 'completed' })).toBe(true);
    expect(await picks(2, ['wf'], limits)).toEqual(['wf-2', null]);
    // A run parked at a wait holds no place.
    await store.recordWait({ runId: 'wf-2', name: 'go', kind: 'signal' });
    const attempts = (await store.getRun('wf-2'))!.attempts;
    expect(await store.parkRun('wf-2', 'signal', 'go', 'w-1', attempts)).toBe('parked');
    expect(await picks(2, ['wf'], limits)).toEqual(['wf-3', null]);
  });

  it('holds first starts to the rate, by the store clock, and never a resumed run', async () => {
    const limits = { wf: { rateLimit: { limit: 2, periodMs: 1000, key: 'provider' } } };
    for (let i = 0; i < 4; i++) await queue('wf', { provider: 'openai' });
    await queue('wf', { provider: 'anthropic' });
    expect(await picks(4, ['wf'], limits)).toEqual(['wf-1', 'wf-2', 'wf-5', null]);
    // A run given back and taken again is not a start: the full window does not hold it.
    await store.releaseRun('wf-1', 'w-1');
    expect(await pick(['wf'], limits)).toBe('wf-1');
    expect(await pick(['wf'], limits)).toBeNull();
    await h.elapse(1100);
    expect(await picks(3, ['wf'], limits)).toEqual(['wf-3', 'wf-4', null]);
  });

  it('gives the last place under a key to exactly one of many stores picking at once', async () => {
    const limits = { wf: { concurrency: { limit: 3, key: 'customer' } } };
    for (let i = 0; i < 12; i++) await queue('wf', { customer: 'acme' });
    const others = await Promise.all(Array.from({ length: 3 }, () => h.reopen()));
    const stores = [store, ...others];
    const taken = await Promise.all(
      Array.from({ length: 12 }, async (_, i) =>
        stores[i % stores.length]!.claimRun({ workerId: `w-${i}`, leaseMs: LEASE, workflows: ['wf'], limits }),
      ),
    );
    expect(taken.filter((run) => run !== null)).toHaveLength(3);
    const running = await store.listRuns({ status: 'running', limit: 100, claimTtlMs: 0 });
    expect(running).toHaveLength(3);
  });

  it('computes the key from the input as limitKeyOf does', async () => {
    const inputs = [
      { customer: 'acme' },
      { customer: 5 },
      { customer: 1.5 },
      { customer: true },
      { customer: null },
      { customer: { id: 1 } },
      {},
      { customer: "o'brien" },
    ];
    const limits: RunLimits = { concurrency: { limit: 1, key: 'customer' } };
    for (const input of inputs) {
      const run = await queue('wf', input);
      const use = await store.limitUse(run.id, limits);
      expect(use?.concurrency?.key, JSON.stringify(input)).toBe(limitKeyOf(run.inputJson, 'customer'));
    }
    const nested = await queue('wf', { provider: { name: 'openai' } });
    expect((await store.limitUse(nested.id, { concurrency: { limit: 1, key: 'provider.name' } }))?.concurrency).toEqual(
      { key: 'openai', running: 0 },
    );
    expect(await store.limitUse('no-such-run', limits)).toBeNull();
  });

  it('says which limit holds a queued run, and for which key', async () => {
    const declared = {
      wf: { concurrency: { limit: 1, key: 'customer' } },
      rated: { rateLimit: { limit: 1, periodMs: 60_000, key: null } },
    };
    await store.registerWorker({ id: 'w-1', host: 'h', pid: 1, slots: 4 });
    await store.publishWorkflows('w-1', [
      { name: 'wf', description: null, inputSchemaJson: '{}', totalSteps: 1, version: null, limits: declared.wf },
      { name: 'rated', description: null, inputSchemaJson: '{}', totalSteps: 1, version: null, limits: declared.rated },
    ]);
    await store.heartbeatWorker('w-1');
    await queue('wf', { customer: 'acme' });
    const held = await queue('wf', { customer: 'acme' });
    await queue('rated', {});
    const rated = await queue('rated', {});
    expect(new Set(await picks(3, ['wf', 'rated'], declared))).toEqual(new Set(['wf-1', 'rated-3', null]));
    const reason = async (id: string) =>
      queuedReasonOf(
        store,
        (await store.getRun(id))!,
        await readStallFacts(store, { now: h.clock.now(), runLeaseMs: LEASE, heartbeatMs: 1000 }),
      );
    expect(await reason(held.id)).toEqual({
      kind: 'held',
      workflow: 'wf',
      limit: 'concurrency',
      key: 'acme',
      message: '1 of 1 runs for key acme are running',
    });
    const rateReason = await reason(rated.id);
    expect(rateReason).toMatchObject({ kind: 'held', workflow: 'rated', limit: 'rate', key: '' });
    expect(rateReason?.message).toMatch(
      /^rate limit of 1 starts per minute of workflow rated: next slot in \d+\.\d s$/,
    );
    const next = rateReason?.kind === 'held' ? (rateReason.nextSlotInS ?? -1) : -1;
    expect(next).toBeGreaterThan(0);
    expect(next).toBeLessThanOrEqual(60);
  });
});
