/**
 * The metrics scrape on every backend: step outcomes, claims, runs by status, duration histograms counted
 * in SQL, and worker heartbeat ages. Durations are given to the store directly (as the checkpoint core
 * passes what it measured), so the bucket counts are exact whatever the machine's speed.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { InsightStore, RetentionStore, RunStore, Store } from '../../lib/store/contract';
import { backends, type StoreHandle } from '../support/backends';

const list = await backends();
const BOUNDS = [10, 100, 1000];

describe.each(list)('metricsSnapshot on $name', (backend) => {
  let h: StoreHandle;
  let store: Store & RunStore & InsightStore;

  beforeEach(async () => {
    h = await backend.open();
    store = h.store as Store & RunStore & InsightStore;
  });
  afterEach(() => h.close());

  const claim = (idemKey: string, token: string) =>
    store.claim({
      idemKey,
      runId: 'm',
      token,
      workerId: 'w1',
      step: null,
      attempt: 1,
      leaseMs: 60_000,
      claimTtlMs: 60_000,
    });
  const commit = (idemKey: string, token: string, durationMs: number) =>
    store.commit({
      idemKey,
      token,
      runId: 'm',
      resultJson: '1',
      step: null,
      fingerprint: null,
      workerId: 'w1',
      durationMs,
    });

  /** Claims and commits each key under `${tokenPrefix}<i>`, every step taking `durationMs`. */
  const commitAll = async (keys: string[], tokenPrefix: string, durationMs: number) => {
    for (const [i, key] of keys.entries()) {
      await claim(key, `${tokenPrefix}${i}`);
      await commit(key, `${tokenPrefix}${i}`, durationMs);
    }
  };
  /**
   * A run taken by worker w1 with `keys` committed in it, each taking `durationMs`, and a failed attempt of 500 ms
   * for each of `failures`, then completed.
   */
  const finishedRun = async (id: string, keys: string[], durationMs: number, failures: string[] = []) => {
    await store.createRun({ id, workflow: 'w', inputJson: '{}', totalSteps: null });
    expect((await store.claimRun({ workerId: 'w1', leaseMs: 60_000, workflows: ['w'] }))?.id).toBe(id);
    for (const key of [...keys, ...failures]) {
      const common = { idemKey: key, runId: id, token: `t-${key}`, workerId: 'w1', step: null };
      await store.claim({ ...common, attempt: 1, leaseMs: 60_000, claimTtlMs: 60_000 });
      if (failures.includes(key)) await store.releaseClaim({ ...common, durationMs: 500, error: 'boom' });
      else await store.commit({ ...common, resultJson: '1', fingerprint: null, durationMs });
    }
    expect(await store.finishRun(id, 'w1', { status: 'completed' })).toBe(true);
  };
  /** Prunes the finished runs that ended by `id`'s end (its own included), through the store as a worker does. */
  const pruneThrough = async (id: string) =>
    (h.store as Store & RetentionStore).pruneBatch({ before: (await store.getRun(id))!.finishedAt! + 0.5 });
  /** What a worker does every 30 s (lib/engine/worker/tally.ts), for these bounds. */
  const advance = () => store.advanceMetricsTally({ boundsMs: BOUNDS, settleMs: 0 });
  const snap = (settleMs = 0) => store.metricsSnapshot({ claimTtlMs: 60_000, boundsMs: BOUNDS, settleMs });
  const snapOf = (other: Store) =>
    (other as Store & InsightStore).metricsSnapshot({ claimTtlMs: 60_000, boundsMs: BOUNDS, settleMs: 0 });
  const fail = async (idemKey: string, durationMs: number) => {
    await claim(idemKey, `t-${idemKey}`);
    await store.releaseClaim({
      idemKey,
      token: `t-${idemKey}`,
      runId: 'm',
      step: null,
      workerId: 'w1',
      durationMs,
      error: 'boom',
    });
  };

  it('is all zeros on an empty store', async () => {
    const m = await store.metricsSnapshot({ claimTtlMs: 60_000, boundsMs: BOUNDS, settleMs: 0 });
    expect(m.steps).toEqual({
      executed: 0,
      skipped: 0,
      awaited: 0,
      failed: 0,
      lease_lost: 0,
      expired: 0,
      resolved: 0,
      key_reuse: 0,
    });
    expect(m.claims).toEqual({ live: 0, orphaned: 0 });
    expect(m.stepDurations.executed).toEqual({ boundsMs: BOUNDS, counts: [0, 0, 0], count: 0, sumMs: 0 });
    expect(m.workers).toEqual([]);
  });

  it('counts outcomes, claims, runs and durations from the rows every worker wrote', async () => {
    for (const [key, ms] of [
      ['k1', 5],
      ['k2', 50],
      ['k3', 500],
    ] as const) {
      await claim(key, `t-${key}`);
      await commit(key, `t-${key}`, ms);
    }
    await claim('k4', 't-k4');
    await store.releaseClaim({
      idemKey: 'k4',
      token: 't-k4',
      runId: 'm',
      step: null,
      workerId: 'w1',
      durationMs: 20,
      error: 'boom',
    });
    await claim('k5', 't-k5');
    await expect(commit('k5', 'not-ours', 70)).rejects.toThrow(/lease/i);
    await h.insertOutsideClaim('k6', 'ext');
    expect(await store.expireClaim('k6', { actor: 'test', force: true, claimTtlMs: 60_000 })).toBe('expired');
    await h.insertOutsideClaim('k7', 'ext');
    await store.resolveClaim({ idemKey: 'k7', resultJson: '2', actor: 'test', claimTtlMs: 0 });
    await h.insertOutsideClaim('k8', 'ext');
    await store.recordEvent({ runId: 'm', outcome: 'key_reuse', idemKey: 'k1' });
    // A run-level takeover is recorded as `expired` with no key: not a step, not counted.
    await store.recordEvent({ runId: 'm', outcome: 'expired' });
    await store.saveProgress({ runId: 'm', step: 3, stateJson: '{}', executed: 0, skipped: 2, awaited: 1, saveMs: 2 });
    await store.saveProgress({
      runId: 'm2',
      step: 1,
      stateJson: '{}',
      executed: 1,
      skipped: 0,
      awaited: 0,
      saveMs: 200,
    });
    await store.createRun({ id: 'q1', workflow: 'w', inputJson: '{}', totalSteps: null });
    await store.createRun({ id: 'c1', workflow: 'w', inputJson: '{}', totalSteps: null });
    await store.actOnRun('c1', 'cancel', 'test');

    // claimTtlMs 0: the outside client's claim (no lease column) is orphaned at once; k5 has a live lease.
    const m = await store.metricsSnapshot({ claimTtlMs: 0, boundsMs: BOUNDS, settleMs: 0 });
    expect(m.steps).toEqual({
      executed: 3,
      skipped: 2,
      awaited: 1,
      failed: 1,
      lease_lost: 1,
      expired: 1,
      resolved: 1,
      key_reuse: 1,
    });
    expect(m.claims).toEqual({ live: 1, orphaned: 1 });
    // m holds k5 and ext holds k8: outside clients' runs with a claim are running; m2 has none, idle.
    expect(m.runsByStatus).toEqual({
      queued: 1,
      running: 2,
      paused: 0,
      waiting: 0,
      completed: 0,
      failed: 0,
      cancelled: 1,
      rejected: 0,
      idle: 1,
    });
    expect(m.stepDurations).toEqual({
      executed: { boundsMs: BOUNDS, counts: [1, 2, 3], count: 3, sumMs: 555 },
      failed: { boundsMs: BOUNDS, counts: [0, 1, 1], count: 1, sumMs: 20 },
      lease_lost: { boundsMs: BOUNDS, counts: [0, 1, 1], count: 1, sumMs: 70 },
    });
  });

  it('gives each running worker its heartbeat age by the store clock, stopped workers none', async () => {
    await store.registerWorker({ id: 'w-live', host: 'h', pid: 1 });
    await store.registerWorker({ id: 'w-gone', host: 'h', pid: 2 });
    await store.stopWorker('w-gone');
    await h.elapse(1500);
    const { workers } = await store.metricsSnapshot({ claimTtlMs: 60_000, boundsMs: BOUNDS, settleMs: 0 });
    expect(workers.map((w) => w.id)).toEqual(['w-live']);
    // SQLite's clock is a ManualClock that moved exactly 1.5 s; PostgreSQL's is the database's, shifted 1.5 s
    // on, and ticking by itself meanwhile.
    if (backend.name === 'sqlite') expect(workers[0]!.heartbeatAgeSeconds).toBeCloseTo(1.5, 6);
    else expect(workers[0]!.heartbeatAgeSeconds).toBeGreaterThanOrEqual(1.5);
  });

  // Deletions through the store's own paths (prune, rerun) are in test/contract/metrics-tally.test.ts.
  it('reads only what is new on each scrape: totals add up exactly, and concurrent scrapes agree', async () => {
    for (let i = 0; i < 4; i++) {
      await claim(`a${i}`, `ta${i}`);
      await commit(`a${i}`, `ta${i}`, 5);
    }
    expect((await snap()).steps.executed).toBe(4);
    for (let i = 0; i < 3; i++) {
      await claim(`b${i}`, `tb${i}`);
      await commit(`b${i}`, `tb${i}`, 50);
    }
    await claim('c0', 'tc0');
    await store.releaseClaim({
      idemKey: 'c0',
      token: 'tc0',
      runId: 'm',
      step: null,
      workerId: 'w1',
      durationMs: 500,
      error: 'boom',
    });
    // Three scrapes at once, each from the same counted rows: the same values.
    const [x, y, z] = await Promise.all([snap(), snap(), snap()]);
    for (const m of [x, y, z]) {
      expect(m.steps.executed).toBe(7);
      expect(m.steps.failed).toBe(1);
      expect(m.stepDurations.executed).toEqual({ boundsMs: BOUNDS, counts: [4, 7, 7], count: 7, sumMs: 170 });
      expect(m.stepDurations.failed).toEqual({ boundsMs: BOUNDS, counts: [0, 0, 1], count: 1, sumMs: 500 });
    }
  });
  // SQLite's `committed` has a TEXT key, so its rowid is not AUTOINCREMENT: once the newest rows are deleted,
  // new rows take rowids at or below the watermark. SQLite notices the row at its watermark is gone and
  // recounts what remains, a counter reset (3 -> 2, which Prometheus reads as an increase of 2). PostgreSQL
  // reads by time, so nothing is reused there and the counter keeps growing (3 -> 5).
  it('counts steps committed after the newest committed rows were deleted', async () => {
    await finishedRun('a', ['a0', 'a1', 'a2'], 5);
    await advance();
    expect((await snap()).steps.executed).toBe(3);
    expect((await pruneThrough('a')).committed).toBe(3);
    await commitAll(['b0', 'b1'], 'tb', 50);
    const m = await snap();
    if (backend.name === 'sqlite') {
      expect(m.steps.executed).toBe(2);
      expect(m.stepDurations.executed).toEqual({ boundsMs: BOUNDS, counts: [0, 2, 2], count: 2, sumMs: 100 });
    } else {
      expect(m.steps.executed).toBe(5);
      expect(m.stepDurations.executed).toEqual({ boundsMs: BOUNDS, counts: [3, 5, 5], count: 5, sumMs: 115 });
    }
  });

  // The same keys committed again after a prune take the same rowids on SQLite, the newest one the
  // watermark's: the key alone would say the row there is the one already counted; its commit time does not.
  it('counts a key committed again after its row was deleted', async () => {
    await finishedRun('a', ['a0', 'a1', 'a2'], 5);
    await advance();
    expect((await snap()).steps.executed).toBe(3);
    expect((await pruneThrough('a')).committed).toBe(3);
    // SQLite's ManualClock stands still unless moved; PostgreSQL's moves by itself.
    if (backend.name === 'sqlite') await h.elapse(1000);
    await commitAll(['a0', 'a1', 'a2'], 'tb', 50);
    const m = await snap();
    if (backend.name === 'sqlite') {
      expect(m.steps.executed).toBe(3);
      expect(m.stepDurations.executed).toEqual({ boundsMs: BOUNDS, counts: [0, 3, 3], count: 3, sumMs: 150 });
    } else {
      expect(m.steps.executed).toBe(6);
    }
  });

  // PostgreSQL: an event's `at` is now() at its statement's start, its id is taken at insert, so a lower id
  // can carry a later time. The later event is written here with the time the concurrent statement would
  // have given it; the first scrape settles only the earlier one, the second both. SQLite hands ids out in
  // commit order, one writer at a time, and counts by id with no settle window: both at once.
  it('counts an event whose id is lower but whose time is later, once it settles', async () => {
    const now = Date.now() / 1000;
    const failed = (key: string, ms: number, ageS: number) =>
      h.exec(`INSERT INTO step_events (run_id, idem_key, outcome, count, duration_ms, at)
      VALUES ('m', '${key}', 'failed', 1, ${ms}, ${now - ageS})`);
    await failed('late', 50, 0);
    await failed('early', 500, 60);
    const first = await store.metricsSnapshot({ claimTtlMs: 60_000, boundsMs: BOUNDS, settleMs: 30_000 });
    if (backend.name === 'postgres') {
      expect(first.steps.failed).toBe(1);
      expect(first.stepDurations.failed).toEqual({ boundsMs: BOUNDS, counts: [0, 0, 1], count: 1, sumMs: 500 });
    } else {
      expect(first.steps.failed).toBe(2);
    }
    const second = await store.metricsSnapshot({ claimTtlMs: 60_000, boundsMs: BOUNDS, settleMs: 0 });
    expect(second.steps.failed).toBe(2);
    expect(second.stepDurations.failed).toEqual({ boundsMs: BOUNDS, counts: [0, 1, 2], count: 2, sumMs: 550 });
  });

  // A cutoff earlier than the last one (the database clock stepped back; here, a longer settle window) must
  // not move the watermarks back, or the rows between would be counted twice.
  it('never moves its watermarks back when the cutoff does', async () => {
    await claim('k1', 't1');
    await commit('k1', 't1', 5);
    await store.recordEvent({ runId: 'm', outcome: 'key_reuse', idemKey: 'k1' });
    for (const settleMs of [0, 60_000, 0]) {
      const m = await snap(settleMs);
      expect(m.steps.executed).toBe(1);
      expect(m.steps.key_reuse).toBe(1);
    }
  });

  // Two dashboard processes behind one port, scraped in turn: the second starts after a prune, and must still
  // report the first's counter, or Prometheus reads a reset on every other scrape. A worker advanced the stored
  // tally before the prune. Pruning every run deletes the row at the watermark, which resets SQLite's executed
  // count (as above) for both stores alike; pruning the older run keeps it, so there nothing resets and 3 + 2
  // stay counted.
  it.each([
    { pruned: 'every run', upTo: 'new', executed: { sqlite: 2, postgres: 5 } },
    { pruned: 'the older run', upTo: 'old', executed: { sqlite: 5, postgres: 5 } },
  ])(
    "gives a second store on the same database the first one's totals after $pruned was pruned",
    async ({ upTo, executed }) => {
      await finishedRun('old', ['a0', 'a1'], 5, ['f0']);
      await h.elapse(1000);
      await finishedRun('new', ['a2'], 5);
      await advance();
      const first = await snap();
      expect(first.steps.executed).toBe(3);
      expect(first.steps.failed).toBe(1);
      expect((await pruneThrough(upTo)).events).toBe(1);
      await commitAll(['b0', 'b1'], 'tb', 50);
      const other = await h.reopen();
      const b = await snapOf(other);
      const a = await snap();
      for (const m of [b, a]) {
        expect(m.steps.executed).toBe(executed[backend.name]);
        // Events are read by id (SQLite) or time: never reset, the pruned failure stays counted by both.
        expect(m.steps.failed).toBe(1);
        expect(m.stepDurations.failed).toEqual({ boundsMs: BOUNDS, counts: [0, 0, 1], count: 1, sumMs: 500 });
      }
      expect(a.stepDurations.executed).toEqual(b.stepDurations.executed);
      // Scrapes of both at once: a new step is counted once by each.
      await commitAll(['c0'], 'tc', 5);
      const [x, y] = await Promise.all([snapOf(other), snap()]);
      expect(x.steps.executed).toBe(executed[backend.name] + 1);
      expect(y.steps.executed).toBe(executed[backend.name] + 1);
    },
  );

  // A restarted dashboard is a new store on the same database: it carries on from the stored totals. A recount
  // would find only what prune left (1 step, no failure) and Prometheus would read a reset.
  it('gives a restarted dashboard the totals the last one reached, not a recount of what remains', async () => {
    await finishedRun('old', ['a0', 'a1'], 5, ['f0']);
    await h.elapse(1000);
    await finishedRun('new', ['a2'], 5);
    const before = await snap();
    expect(before.steps.executed).toBe(3);
    expect(before.steps.failed).toBe(1);
    await advance();
    expect(await pruneThrough('old')).toMatchObject({ committed: 2, events: 1 });
    const restarted = await h.reopen();
    const after = await snapOf(restarted);
    expect(after.steps).toEqual(before.steps);
    expect(after.stepDurations).toEqual({
      executed: { boundsMs: BOUNDS, counts: [3, 3, 3], count: 3, sumMs: 15 },
      failed: { boundsMs: BOUNDS, counts: [0, 0, 1], count: 1, sumMs: 500 },
      lease_lost: { boundsMs: BOUNDS, counts: [0, 0, 0], count: 0, sumMs: 0 },
    });
    await commitAll(['b0'], 'tb', 50);
    expect((await snapOf(restarted)).steps.executed).toBe(4);
  });
});
