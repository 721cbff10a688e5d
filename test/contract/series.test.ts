/**
 * The run page's bounded reads, on every backend, over a seeded run of 10,000 steps: bucketed timings and
 * commits (a few hundred rows whose counts sum to the run), the last steps and events, claim pages and counts.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Backend } from '../../lib/store/index';
import { seedDemo } from '../../lib/store/seed/index';
import { backends, type StoreHandle } from '../support/backends';

const list = await backends();
const TTL = 60_000;

describe.each(list)('run series on $name', (backend) => {
  let h: StoreHandle;
  let store: Backend;

  beforeEach(async () => {
    h = await backend.open();
    store = h.store as typeof store;
  });
  afterEach(() => h.close());

  it('buckets 10,000 steps into at most 500 step ranges and 400 time slices that sum to the run', async () => {
    await seedDemo(store, { runs: 1, steps: 1, bigRunSteps: 10_000 });
    const steps = await store.stepTimingBuckets('seed-big', { buckets: 500 });
    expect(steps.length).toBe(500);
    expect(steps.reduce((sum, b) => sum + b.count, 0)).toBe(10_000);
    expect(steps.every((b) => b.count === 20 && b.toStep - b.fromStep === 19)).toBe(true);
    expect([steps[0]!.fromStep, steps.at(-1)!.toStep]).toEqual([0, 9999]);
    expect(steps.every((b) => b.avgMs! > 0 && b.maxMs! >= b.avgMs!)).toBe(true);
    expect((await store.stepTimingBuckets('seed-big', { buckets: 300 })).length).toBeLessThanOrEqual(300);
    expect(await store.stepTimingBuckets('nothing', { buckets: 500 })).toEqual([]);

    const slices = await store.commitBuckets('seed-big', { buckets: 400 });
    expect(slices.length).toBeLessThanOrEqual(400);
    expect(slices.reduce((sum, b) => sum + b.executed, 0)).toBe(10_000);
    expect(slices.reduce((sum, b) => sum + b.skipped + b.awaited, 0)).toBe(0);
    expect(slices.every((b, i) => i === 0 || b.t > slices[i - 1]!.t)).toBe(true);
    expect(await store.commitBuckets('nothing', { buckets: 400 })).toEqual([]);
  });

  it('the last steps and events of a run, oldest first; skips counted in the time slices', async () => {
    await seedDemo(store, { runs: 4, steps: 60, bigRunSteps: 10_000 });
    const last = await store.recentSteps('seed-big', { limit: 5 });
    expect(last.map((s) => s.step)).toEqual([9995, 9996, 9997, 9998, 9999]);
    expect(last.map((s) => s.idemKey)).toEqual([9995, 9996, 9997, 9998, 9999].map((n) => `seed-big:step:${n}`));
    // Every 25th step failed once: steps 24, 49, … 9999, so 400 failed events.
    const events = await store.recentEvents('seed-big', { limit: 3 });
    expect(events.map((e) => [e.outcome, e.step])).toEqual([
      ['failed', 9949],
      ['failed', 9974],
      ['failed', 9999],
    ]);
    // Run 4 (index 3) crashed once and was resumed: an expired and a skipped event.
    expect((await store.recentEvents('seed-000004', { limit: 10, outcome: 'skipped' })).map((e) => e.count)).toEqual([
      1,
    ]);
    expect(await store.recentEvents('seed-000004', { limit: 10, outcome: 'key_reuse' })).toEqual([]);
    const slices = await store.commitBuckets('seed-000004', { buckets: 10 });
    expect(slices.reduce((sum, b) => sum + b.executed, 0)).toBe(60);
    expect(slices.reduce((sum, b) => sum + b.skipped, 0)).toBe(1);
  });

  it('the last events of one outcome among others: the newest `limit` of them, oldest first, no other outcome', async () => {
    const outcomes = ['failed', 'key_reuse', 'failed', 'key_reuse', 'expired', 'key_reuse', 'failed'] as const;
    for (const [step, outcome] of outcomes.entries())
      await store.recordEvent({ runId: 'mixed', outcome, step, idemKey: `k${step}` });
    await store.recordEvent({ runId: 'other', outcome: 'key_reuse', step: 99, idemKey: 'other:k' });
    expect((await store.recentEvents('mixed', { limit: 2, outcome: 'key_reuse' })).map((e) => e.step)).toEqual([3, 5]);
    expect((await store.recentEvents('mixed', { limit: 10, outcome: 'failed' })).map((e) => e.step)).toEqual([0, 2, 6]);
    expect((await store.recentEvents('mixed', { limit: 3 })).map((e) => [e.step, e.outcome])).toEqual([
      [4, 'expired'],
      [5, 'key_reuse'],
      [6, 'failed'],
    ]);
    expect(await store.recentEvents('mixed', { limit: 10, outcome: 'resolved' })).toEqual([]);
  });

  it('claims page by keyset cursor without gaps or repeats, and are counted without listing them', async () => {
    await seedDemo(store, { runs: 100, steps: 4 });
    // Runs 0, 10, … 90 are running with one claim each; those with an even tens digit are orphaned.
    expect(await store.countClaims({ claimTtlMs: TTL })).toEqual({ total: 10, orphaned: 5 });
    const seen: string[] = [];
    let after: { claimedAt: number; idemKey: string } | undefined;
    for (let page = 0; page < 5; page++) {
      const rows = await store.listClaims({ claimTtlMs: TTL, limit: 3, after });
      seen.push(...rows.map((c) => c.idemKey));
      if (rows.length < 3) break;
      after = { claimedAt: rows.at(-1)!.claimedAt, idemKey: rows.at(-1)!.idemKey };
    }
    expect(seen.length).toBe(10);
    expect(new Set(seen).size).toBe(10);
    expect((await store.listClaims({ claimTtlMs: TTL })).length).toBe(10);
  });
});
