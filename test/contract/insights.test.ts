/**
 * The control plane's reads, on every backend: run stats, keyset pages of runs, step timings, key search,
 * unstable-key detection, recorded events. Each test builds its rows through the protocol itself.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runAgent } from '../../lib/checkpoint/agent';
import { Checkpoint } from '../../lib/checkpoint/checkpoint';
import type { InsightStore, RunStore, Store } from '../../lib/store/types';
import { backends, type StoreHandle } from '../support/backends';

const list = await backends();
const TTL = 60_000;

describe.each(list)('insights on $name', (backend) => {
  let h: StoreHandle;
  let store: Store & RunStore & InsightStore;

  beforeEach(async () => {
    h = await backend.open();
    store = h.store as Store & RunStore & InsightStore;
  });
  afterEach(() => h.close());

  it('runStats counts runs by status (outside clients as running or idle), counters, recent commits and orphans', async () => {
    await store.createRun({ id: 'q1', workflow: 'w', inputJson: '{}', totalSteps: 3 });
    await store.createRun({ id: 'q2', workflow: 'w', inputJson: '{}', totalSteps: 3 });
    await store.actOnRun('q2', 'cancel', 'test');
    await runAgent([1, 2, 3], new Checkpoint(store, 'ext-done'), (x) => x);
    await runAgent([1, 2], new Checkpoint(store, 'ext-skip'), (x) => x);
    await runAgent([1, 2, 3, 4], new Checkpoint(store, 'ext-skip'), (x) => x);
    await h.insertOutsideClaim('ext-claim:step:0', 'ext-claim');
    const before = (await store.getCommitted('ext-done:step:0'))!.committedAt;

    const stats = await store.runStats({ sinceSeconds: before - 1, claimTtlMs: TTL });
    expect(stats.byStatus).toEqual({ queued: 1, running: 1, paused: 0, completed: 0, failed: 0, cancelled: 1, idle: 2 });
    expect(stats).toMatchObject({ executed: 7, skipped: 0, awaited: 0, committedSince: 7, orphanedClaims: 0 });
    const short = await store.runStats({ sinceSeconds: before + 3600, claimTtlMs: 1 });
    expect(short.committedSince).toBe(0);
    await h.elapse(700);
    expect((await store.runStats({ sinceSeconds: 0, claimTtlMs: 100 })).orphanedClaims).toBe(1);
  });

  it('listRuns pages by (updatedAt, id) without gaps or repeats', async () => {
    for (let i = 0; i < 7; i++) await store.createRun({ id: `r${i}`, workflow: 'w', inputJson: '{}', totalSteps: null });
    const seen: string[] = [];
    let after: { updatedAt: number; id: string } | undefined;
    for (let pages = 0; pages < 5; pages++) {
      const page = await store.listRuns({ limit: 3, claimTtlMs: TTL, after });
      seen.push(...page.map((r) => r.id));
      if (page.length < 3) break;
      const last = page[page.length - 1]!;
      after = { updatedAt: last.updatedAt, id: last.id };
    }
    expect(seen.sort()).toEqual(['r0', 'r1', 'r2', 'r3', 'r4', 'r5', 'r6']);
    const progressed = await store.listRuns({ limit: 100, claimTtlMs: TTL });
    expect(progressed.length).toBe(7);
  });

  it('step timings in step order, key search, unstable keys and recorded events', async () => {
    await runAgent(Array.from({ length: 12 }, (_, i) => i), new Checkpoint(store, 'run'), (x) => ({ x }));
    const timings = await store.listStepTimings('run');
    expect(timings.map((t) => t.step)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]);
    expect(timings.every((t) => t.source === 'executed' && typeof t.durationMs === 'number')).toBe(true);
    expect((await store.listStepTimings('run', { limit: 5 })).length).toBe(5);

    const found = await store.searchCommitted('run', 'step:1');
    expect(found.map((c) => c.step)).toEqual([1, 10, 11]);
    expect(await store.searchCommitted('run', "%' OR 1=1 --")).toEqual([]);

    expect(await store.unstableKeys('run')).toEqual([]);
    // A key with a timestamp mixed in: the same step committed again under a new key.
    await new Checkpoint(store, 'run').runOnce('run:step:3:1700000000', () => 'again', { step: 3 });
    expect(await store.unstableKeys('run')).toEqual([{ step: 3, keys: expect.arrayContaining(['run:step:3', 'run:step:3:1700000000']) }]);

    await store.recordEvent({ runId: 'run', outcome: 'key_reuse', idemKey: 'run:step:1', detail: 'fingerprint differs' });
    const events = await store.listEvents('run');
    expect(events.at(-1)).toMatchObject({ outcome: 'key_reuse', idemKey: 'run:step:1', detail: 'fingerprint differs', count: 1 });
  });
});
