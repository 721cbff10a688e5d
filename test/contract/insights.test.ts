/**
 * The control plane's reads, on every backend: run stats, keyset pages of runs, step timings, key search,
 * unstable-key detection, recorded events. Each test builds its rows through the protocol itself.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runAgent } from '../../lib/checkpoint/agent';
import { Checkpoint } from '../../lib/checkpoint/checkpoint';
import type { InsightStore, RunStore, Store } from '../../lib/store/contract';
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
    expect(stats.byStatus).toEqual({
      queued: 1,
      running: 1,
      paused: 0,
      waiting: 0,
      completed: 0,
      failed: 0,
      cancelled: 1,
      rejected: 0,
      idle: 2,
    });
    expect(stats).toMatchObject({ executed: 7, skipped: 0, awaited: 0, committedSince: 7, orphanedClaims: 0 });
    const short = await store.runStats({ sinceSeconds: before + 3600, claimTtlMs: 1 });
    expect(short.committedSince).toBe(0);
    await h.elapse(700);
    expect((await store.runStats({ sinceSeconds: 0, claimTtlMs: 100 })).orphanedClaims).toBe(1);
  });

  it('runStats counts what this store and another process committed since its last read', async () => {
    const stats = () => store.runStats({ sinceSeconds: 0, claimTtlMs: TTL });
    await store.createRun({ id: 'mine', workflow: 'w', inputJson: '{}', totalSteps: 3 });
    expect((await stats()).byStatus.queued).toBe(1);
    expect((await stats()).byStatus.queued).toBe(1);
    const other = (await h.reopen()) as Store & RunStore;
    await other.createRun({ id: 'theirs', workflow: 'w', inputJson: '{}', totalSteps: 3 });
    expect((await stats()).byStatus.queued).toBe(2);
    await runAgent([1, 2], new Checkpoint(other, 'ext-other'), (x) => x);
    expect(await stats()).toMatchObject({ executed: 2, byStatus: { queued: 2, idle: 1 } });
    await store.actOnRun('mine', 'cancel', 'test');
    expect((await stats()).byStatus).toMatchObject({ queued: 1, cancelled: 1, idle: 1 });
  });

  it('listRuns pages by (updatedAt, id) without gaps or repeats', async () => {
    for (let i = 0; i < 7; i++)
      await store.createRun({ id: `r${i}`, workflow: 'w', inputJson: '{}', totalSteps: null });
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

  it('unstable keys without step numbers: one input under two keys, or keys differing only in when they ran or an attempt', async () => {
    const cp = new Checkpoint(store, 'loose');
    await cp.runOnce('probe', () => 0);
    // The store's own clock (the database's on PostgreSQL): a key made with Date.now() carries about this time.
    const t = (await store.getCommitted('probe'))!.committedAt;
    const ms = Math.round(t * 1000);
    const run = async (key: string, fingerprint?: string) =>
      cp.runOnce(key, () => key, fingerprint ? { fingerprint } : {});
    // The same work, re-run under a new key: each of these pairs is one side effect done twice.
    await run('charge-card-a', 'sha256:inputA');
    await run('charge-card-b', 'sha256:inputA');
    await run(`notify:${ms}:alice`);
    await run(`notify:${ms - 4_321}:alice`);
    await run(`digest-${new Date(ms).toISOString()}`);
    await run(`digest-${new Date(ms - 90_000).toISOString()}`);
    await run(`email/${Math.floor(t)}.5`);
    await run(`email/${Math.floor(t) - 7}.5`);
    await run('refund:attempt-1');
    await run('refund:attempt-2');
    // Other work, never grouped: items by number, periods far from when they ran, ids that only look like times,
    // content hashes, one fingerprint per key.
    await run('item-1');
    await run('item-2');
    await run('report-2020-01-01T00:00:00Z');
    await run('report-2020-01-02T00:00:00Z');
    await run('user-2125551234');
    await run('user-2125551235');
    await run(`notify:${ms}:bob`);
    await run('a1b2c3d4e5f6', 'sha256:x');
    await run('f6e5d4c3b2a1', 'sha256:y');

    expect(await store.unstableKeys('loose')).toEqual([
      { step: null, keys: ['charge-card-a', 'charge-card-b'], why: 'fingerprint' },
      {
        step: null,
        keys: [`digest-${new Date(ms - 90_000).toISOString()}`, `digest-${new Date(ms).toISOString()}`],
        why: 'time',
      },
      { step: null, keys: [`email/${Math.floor(t) - 7}.5`, `email/${Math.floor(t)}.5`], why: 'time' },
      { step: null, keys: [`notify:${ms - 4_321}:alice`, `notify:${ms}:alice`], why: 'time' },
      { step: null, keys: ['refund:attempt-1', 'refund:attempt-2'], why: 'attempt' },
    ]);
    // Steps come first, and the limit holds across both kinds.
    await cp.runOnce('loose:step:1', () => 1, { step: 1 });
    await cp.runOnce('loose:step:1:retry', () => 1, { step: 1 });
    const limited = await store.unstableKeys('loose', { limit: 2 });
    expect(limited.map((g) => g.why)).toEqual(['step', 'fingerprint']);
  });

  it('step timings in step order, key search, unstable keys and recorded events', async () => {
    await runAgent(
      Array.from({ length: 12 }, (_, i) => i),
      new Checkpoint(store, 'run'),
      (x) => ({ x }),
    );
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
    expect(await store.unstableKeys('run')).toEqual([
      { step: 3, keys: ['run:step:3', 'run:step:3:1700000000'], why: 'step' },
    ]);

    await store.recordEvent({
      runId: 'run',
      outcome: 'key_reuse',
      idemKey: 'run:step:1',
      detail: 'fingerprint differs',
    });
    const events = await store.listEvents('run');
    expect(events.at(-1)).toMatchObject({
      outcome: 'key_reuse',
      idemKey: 'run:step:1',
      detail: 'fingerprint differs',
      count: 1,
    });
  });
});
