/**
 * seedDemo on every backend: the plan's exact counts land in the tables, the store's own reads see them
 * (stats, claims, pages of committed rows), and a second seed with the same prefix is refused untouched.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ConflictError } from '../../lib/errors';
import type { Backend } from '../../lib/store/index';
import { seedDemo, seedPlan } from '../../lib/store/seed/index';
import { backends, type StoreHandle } from '../support/backends';

const list = await backends();
const TTL = 60_000;
const PLAN = { runs: 20, steps: 10, bigRunSteps: 30 };

describe.each(list)('seedDemo on $name', (backend) => {
  let h: StoreHandle;
  let store: Backend;

  beforeEach(async () => {
    h = await backend.open();
    store = h.store as typeof store;
  });
  afterEach(() => h.close());

  it('writes exactly the planned runs, steps, events, claims and workers', async () => {
    const progress: number[] = [];
    const report = await seedDemo(store, PLAN, (done) => progress.push(done));
    // 20 runs: indexes 0 and 10 running, 1 and 11 failed, 2 and 12 paused, 14 completed, plus the big run.
    expect(report).toEqual({
      runs: 21,
      byStatus: { completed: 15, running: 2, failed: 2, paused: 2 },
      // 14×10 + 30 (big) + 2×5 (running) + 2×7 (failed) + 2×3 (paused)
      committed: 200,
      // big run: 1 retried step; failed runs 3 each; paused 1 each; runs 3 and 17 resumed, 2 each
      events: 13,
      claims: 2,
      orphanedClaims: 1,
      progress: 21,
      workers: 4,
    });
    expect(seedPlan(PLAN)).toEqual(report);
    expect(progress.at(-1)).toBe(200);

    const stats = await store.runStats({ sinceSeconds: 0, claimTtlMs: TTL });
    expect(stats.byStatus).toEqual({
      queued: 0,
      running: 2,
      paused: 2,
      waiting: 0,
      completed: 15,
      failed: 2,
      cancelled: 0,
      rejected: 0,
      idle: 0,
    });
    expect(stats).toMatchObject({ executed: 200, skipped: 2, awaited: 0, committedSince: 200, orphanedClaims: 1 });

    const runs = await store.listRuns({ limit: 100, claimTtlMs: TTL });
    expect(runs.length).toBe(21);
    expect(runs.filter((r) => r.workflow === 'seed-demo').length).toBe(21);
    let committed = 0;
    for (const r of runs) committed += await store.countCommitted(r.id);
    expect(committed).toBe(200);
    expect(await store.countCommitted('seed-big')).toBe(30);

    const orphaned = await store.listClaims({ orphanedOnly: true, claimTtlMs: TTL });
    expect(orphaned.map((c) => c.idemKey)).toEqual(['seed-000001:step:5']);
    expect((await store.listClaims({ claimTtlMs: TTL })).length).toBe(2);
    expect((await store.listWorkers()).map((w) => w.id).sort()).toEqual([
      'seed-worker-1',
      'seed-worker-2',
      'seed-worker-3',
      'seed-worker-4',
    ]);

    const big = await store.listEvents('seed-big');
    expect(big.map((e) => [e.outcome, e.step])).toEqual([['failed', 24]]);
    const failed = await store.getRun('seed-000002');
    expect(failed).toMatchObject({
      status: 'failed',
      totalSteps: 10,
      error: 'step 7 failed 3 times: simulated model error (HTTP 503)',
    });
    const page = await store.listCommitted('seed-big', { limit: 10, afterKey: 'seed-big:step:9' });
    expect(page.map((c) => c.step)).toEqual([10, 11, 12, 13, 14, 15, 16, 17, 18, 19]);
  });

  it('refuses a second seed with the same prefix and writes nothing; another prefix adds alongside', async () => {
    await seedDemo(store, { runs: 3, steps: 4 });
    await expect(seedDemo(store, { runs: 3, steps: 4 })).rejects.toBeInstanceOf(ConflictError);
    expect((await store.listRuns({ limit: 100, claimTtlMs: TTL })).length).toBe(3);
    const again = await seedDemo(store, { runs: 3, steps: 4, prefix: 'more' });
    expect(again.committed).toBe(2 + 3 + 1);
    expect((await store.listRuns({ limit: 100, claimTtlMs: TTL })).length).toBe(6);
    expect((await store.runStats({ sinceSeconds: 0, claimTtlMs: TTL })).executed).toBe(12);
  });
});
