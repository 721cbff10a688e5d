/**
 * The stored metrics tally on every backend (lib/store/shared/metrics-tally.ts): a scrape only reads, the
 * workers' advance moves the stored row on, and a prune or a rerun folds the rows it deletes past the marks
 * into it first. Each "process" is a store of its own on the same file or schema (h.reopen()); the numbers are
 * exact, durations being given to the store directly.
 *
 * "Writes nothing" is measured from outside the store: on SQLite the database and WAL files' bytes and the
 * connection's total_changes(); on PostgreSQL a statement-level trigger on every table of the schema that
 * notes each INSERT, UPDATE, DELETE and TRUNCATE (even one that touched no row, as an INSERT … DO NOTHING).
 */
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { InsightStore, MetricsSnapshot, RetentionStore, RunStore, Store } from '../../lib/store/contract';
import { DURATION_BOUNDS_MS } from '../../lib/store/contract';
import type { SqliteStore } from '../../lib/store/sqlite';
import { backends, type StoreHandle } from '../support/backends';

const list = await backends();
const BOUNDS = [10, 100, 1000];
type FullStore = Store & RunStore & InsightStore & RetentionStore;

describe.each(list)('the metrics tally on $name', (backend) => {
  let h: StoreHandle;
  let store: FullStore;

  beforeEach(async () => {
    h = await backend.open();
    store = h.store as FullStore;
  });
  afterEach(() => h.close());

  const snapOf = (s: Store, boundsMs: readonly number[] = BOUNDS) =>
    (s as FullStore).metricsSnapshot({ claimTtlMs: 60_000, boundsMs, settleMs: 0 });
  /** What a worker does every 30 s, for the test's bounds. */
  const advance = (s: Store = store) => (s as FullStore).advanceMetricsTally({ boundsMs: BOUNDS, settleMs: 0 });

  /** Claims and commits each key of run `runId` (step i for the i-th), every step taking `durationMs`. */
  async function commitAll(runId: string, keys: string[], durationMs: number, firstStep = 0): Promise<void> {
    for (const [i, key] of keys.entries()) {
      const common = { idemKey: key, runId, token: `t-${key}`, workerId: 'w1', step: firstStep + i };
      await store.claim({ ...common, attempt: 1, leaseMs: 60_000, claimTtlMs: 60_000 });
      await store.commit({ ...common, resultJson: '1', fingerprint: null, durationMs });
    }
  }
  /** A failed attempt of `key`: one counted `failed` event. */
  async function fail(runId: string, key: string, durationMs: number): Promise<void> {
    const common = { idemKey: key, runId, token: `t-${key}`, workerId: 'w1', step: null };
    await store.claim({ ...common, attempt: 1, leaseMs: 60_000, claimTtlMs: 60_000 });
    await store.releaseClaim({ ...common, durationMs, error: 'boom' });
  }
  /** A run taken by worker w1, its steps committed by the test; finish() ends it completed. */
  async function started(id: string): Promise<{ finish(): Promise<void> }> {
    await store.createRun({ id, workflow: 'w', inputJson: '{}', totalSteps: null });
    expect((await store.claimRun({ workerId: 'w1', leaseMs: 60_000, workflows: ['w'] }))?.id).toBe(id);
    return {
      finish: async () => {
        expect(await store.finishRun(id, 'w1', { status: 'completed' })).toBe(true);
      },
    };
  }

  /** Everything any connection wrote to the store, as something to compare before and after. */
  async function written(): Promise<unknown> {
    if (backend.name === 'sqlite') {
      const db = (store as unknown as SqliteStore).db;
      const hash = createHash('sha256');
      for (const file of [db.name, `${db.name}-wal`]) if (existsSync(file)) hash.update(readFileSync(file));
      const [changes] = await h.rows<{ n: number }>('SELECT total_changes() AS n');
      return { files: hash.digest('hex'), changes: changes!.n };
    }
    return h.rows<{ tbl: string; op: string }>('SELECT tbl, op FROM write_log ORDER BY seq');
  }

  /** PostgreSQL: notes every write statement on the schema's tables into write_log (see the header). */
  async function noteWrites(): Promise<void> {
    if (backend.name !== 'postgres') return;
    await h.exec(`CREATE TABLE write_log (seq bigserial PRIMARY KEY, tbl text NOT NULL, op text NOT NULL);
      CREATE FUNCTION note_write() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $fn$
        BEGIN INSERT INTO write_log (tbl, op) VALUES (TG_TABLE_NAME, TG_OP); RETURN NULL; END $fn$;
      DO $do$ DECLARE t text; BEGIN
        FOR t IN SELECT tablename FROM pg_tables WHERE schemaname = current_schema() AND tablename <> 'write_log' LOOP
          EXECUTE format('CREATE TRIGGER zz_note_write AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON %I
            FOR EACH STATEMENT EXECUTE FUNCTION note_write()', t);
        END LOOP;
      END $do$`);
  }
  const forgetWrites = () => (backend.name === 'postgres' ? h.exec('TRUNCATE write_log') : Promise.resolve());

  it('writes nothing on a scrape, and counts every row exactly, new rows written between scrapes', async () => {
    await noteWrites();
    const other = await h.reopen();
    let executed = 0;
    let failed = 0;
    for (let round = 0; round < 3; round++) {
      await commitAll('m', [`a${round}`, `b${round}`], 5 + round * 50);
      await fail('m', `f${round}`, 500);
      executed += 2;
      failed += 1;
      // The first round has no stored tally at all; the second scrapes past a stored one, the third past a
      // tally a worker moved on between the rounds' writes.
      if (round === 2) await advance();
      await forgetWrites();
      const before = await written();
      const [a, b] = [await snapOf(store), await snapOf(other)];
      const again = await snapOf(store);
      expect(await written()).toEqual(before);
      for (const m of [a, b, again]) {
        expect(m.steps).toMatchObject({ executed, failed });
        expect(m.stepDurations.executed.count).toBe(executed);
        expect(m.stepDurations.failed).toEqual({
          boundsMs: BOUNDS,
          counts: [0, 0, failed],
          count: failed,
          sumMs: 500 * failed,
        });
      }
      expect(b.stepDurations).toEqual(a.stepDurations);
      if (round === 0) await advance();
    }
    // a0 b0 (5 ms), a1 b1 (55 ms), a2 b2 (105 ms).
    expect((await snapOf(store)).stepDurations.executed).toEqual({
      boundsMs: BOUNDS,
      counts: [2, 4, 6],
      count: 6,
      sumMs: 330,
    });
  });

  it("serves the same values from two processes, before and after a worker's advance", async () => {
    const other = await h.reopen();
    await commitAll('m', ['a0', 'a1', 'a2'], 5);
    await fail('m', 'f0', 50);
    const expected = (m: MetricsSnapshot) => {
      expect(m.steps).toMatchObject({ executed: 3, failed: 1 });
      expect(m.stepDurations.executed).toEqual({ boundsMs: BOUNDS, counts: [3, 3, 3], count: 3, sumMs: 15 });
      expect(m.stepDurations.failed).toEqual({ boundsMs: BOUNDS, counts: [0, 1, 1], count: 1, sumMs: 50 });
    };
    expected(await snapOf(store));
    expected(await snapOf(other));
    // A worker's advance moves the counted rows into the stored row: nothing changes for either process.
    expect(await advance(other)).toEqual({ done: true });
    expected(await snapOf(store));
    expected(await snapOf(other));
    expected(await snapOf(await h.reopen()));
    // Scrapes of both at once: a new step is counted once by each.
    await commitAll('m', ['c0'], 500);
    const [x, y] = await Promise.all([snapOf(other), snapOf(store)]);
    for (const m of [x, y]) {
      expect(m.steps.executed).toBe(4);
      expect(m.stepDurations.executed).toEqual({ boundsMs: BOUNDS, counts: [3, 3, 4], count: 4, sumMs: 515 });
    }
  });

  // The row at the marks is the recent run's, which the prune keeps: on SQLite a prune of that row resets the
  // executed counts (test/contract/metrics.test.ts), the one exception to "never drops".
  it('never drops when a prune deletes rows past the marks, nor after the next advance', async () => {
    const other = await h.reopen();
    const old = await started('old');
    const recent = await started('recent');
    await commitAll('old', ['o0', 'o1', 'o2'], 5);
    await fail('old', 'of0', 500);
    await commitAll('recent', ['r0'], 500);
    await advance();
    // Past the marks: counted by every scrape's delta, not yet by the stored tally.
    await commitAll('old', ['o3', 'o4'], 50, 3);
    await fail('old', 'of1', 50);
    await old.finish();
    await h.elapse(1000);
    await recent.finish();
    const before = (await store.getRun('recent'))!.finishedAt! - 0.5;

    const expected = (m: MetricsSnapshot) => {
      expect(m.steps).toMatchObject({ executed: 6, failed: 2 });
      expect(m.stepDurations.executed).toEqual({ boundsMs: BOUNDS, counts: [3, 5, 6], count: 6, sumMs: 615 });
      expect(m.stepDurations.failed).toEqual({ boundsMs: BOUNDS, counts: [0, 1, 2], count: 2, sumMs: 550 });
    };
    expected(await snapOf(store));
    expected(await snapOf(other));
    expect(await store.pruneBatch({ before })).toMatchObject({ runs: 1, committed: 5, events: 2 });
    expect(await store.countCommitted('old')).toBe(0);
    // This process (carrying on from its own marks until the stored row changed), another, a restarted one.
    expected(await snapOf(store));
    expected(await snapOf(other));
    expected(await snapOf(await h.reopen()));
    await advance();
    expected(await snapOf(store));
    expected(await snapOf(other));
  });

  it('never drops when a rerun moves rows past the marks to history', async () => {
    const other = await h.reopen();
    const run = await started('r');
    await commitAll('r', ['s0', 's1'], 5);
    // The row at the marks, which the rerun keeps (see the prune's case).
    await commitAll('m', ['z0'], 5);
    await advance();
    await commitAll('r', ['s2', 's3'], 50, 2);
    await run.finish();
    const expected = (m: MetricsSnapshot) => {
      expect(m.steps.executed).toBe(5);
      expect(m.stepDurations.executed).toEqual({ boundsMs: BOUNDS, counts: [3, 5, 5], count: 5, sumMs: 115 });
    };
    expected(await snapOf(store));
    expected(await snapOf(other));
    // From step 1: s1 is at or below the marks, s2 and s3 past them.
    const rerun = await store.rerunRun({
      runId: 'r',
      fromStep: 1,
      inputJson: null,
      actor: 'test',
      reason: null,
      claimTtlMs: 60_000,
    });
    expect(rerun.moved).toBe(3);
    expect(await store.countCommitted('r')).toBe(1);
    expect(await store.countCommitted('m')).toBe(1);
    expected(await snapOf(store));
    expected(await snapOf(other));
    expected(await snapOf(await h.reopen()));
    // The rerun's steps commit the same keys again: each counts as the new execution it is.
    await store.claimRun({ workerId: 'w1', leaseMs: 60_000, workflows: ['w'] });
    await commitAll('r', ['s1'], 500, 1);
    for (const m of [await snapOf(store), await snapOf(other)]) {
      expect(m.steps.executed).toBe(6);
      expect(m.stepDurations.executed).toEqual({ boundsMs: BOUNDS, counts: [3, 5, 6], count: 6, sumMs: 615 });
    }
  });

  // The dashboard's bounds have no stored row until a worker's first advance. A prune before it makes one, so
  // that the rows it deletes stay counted for a process that starts only afterwards.
  it("keeps the dashboard's counters when a prune comes before any worker advanced", async () => {
    const old = await started('old');
    await commitAll('old', ['o0', 'o1'], 5);
    await old.finish();
    await h.elapse(1000);
    const recent = await started('recent');
    await commitAll('recent', ['r0'], 5);
    await recent.finish();
    const before = (await store.getRun('recent'))!.finishedAt! - 0.5;
    expect((await snapOf(store, DURATION_BOUNDS_MS)).steps.executed).toBe(3);
    expect((await store.pruneBatch({ before })).committed).toBe(2);
    expect((await snapOf(store, DURATION_BOUNDS_MS)).steps.executed).toBe(3);
    expect((await snapOf(await h.reopen(), DURATION_BOUNDS_MS)).steps.executed).toBe(3);
  });
});
