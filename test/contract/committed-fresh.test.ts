/**
 * SQLite's fresh committed rows (#29, lib/store/sqlite/committed-rows.ts): a step's commit leaves its row in
 * committed_fresh, and the commit that brings the connection's count to SETTLE_EVERY settles every fresh row
 * into committed_run_step, in that commit's transaction. Whichever index a row is in, every read of the run sees it,
 * in one order; any other writer's row (a hand resolution, a rerun, the reference article's client) is settled
 * from the start; and a store from before the layout opens with every row settled.
 */
import { describe, expect, it } from 'vitest';
import { runAgent } from '../../lib/checkpoint/agent';
import { Checkpoint } from '../../lib/checkpoint/checkpoint';
import { openSqliteStore, type SqliteStore } from '../../lib/store/sqlite';
import { SETTLE_EVERY } from '../../lib/store/sqlite/settle';
import { sqliteBefore } from '../support/sqlite-before';
import { tempDir } from '../support/tmp';

const TTL = 30_000;

const halves = (store: SqliteStore, runId?: string) =>
  store.db
    .prepare<[], { fresh: number; settled: number }>(
      `SELECT coalesce(sum(fresh IS NOT NULL), 0) AS fresh, coalesce(sum(fresh IS NULL), 0) AS settled FROM committed
      ${runId ? `WHERE run_id = '${runId}'` : ''}`,
    )
    .get()!;

/** Every key of the run through listCommitted's keyset pages of `limit`. */
async function pagedKeys(store: SqliteStore, runId: string, limit: number): Promise<string[]> {
  const seen: string[] = [];
  let afterKey: string | undefined;
  for (;;) {
    const page = await store.listCommitted(runId, { afterKey, limit });
    if (page.length === 0) return seen;
    seen.push(...page.map((r) => r.idemKey));
    afterKey = page.at(-1)!.idemKey;
  }
}

const stepKeys = (runId: string, from: number, to: number) =>
  Array.from({ length: to - from }, (_, i) => `${runId}:step:${from + i}`);

describe('fresh committed rows on SQLite', () => {
  it('settles every fresh row at the SETTLE_EVERY-th commit, and reads see each row once, in order', async () => {
    const store = openSqliteStore({ path: tempDir('waybill-fresh-').file('store.db'), synchronous: 'normal' });
    try {
      const run = (id: string, steps: number) =>
        runAgent(
          Array.from({ length: steps }, (_, i) => i),
          new Checkpoint(store, id, { workerId: 'wk', clock: store.clock }),
          (x) => x * 2,
        );
      // Two runs at once, so settles land inside group-commit batches of both.
      const a = 600;
      const b = SETTLE_EVERY - a - 1;
      await Promise.all([run('a', a), run('b', b)]);
      expect(halves(store)).toEqual({ fresh: SETTLE_EVERY - 1, settled: 0 });

      await run('c', 1);
      expect(halves(store)).toEqual({ fresh: 0, settled: SETTLE_EVERY });

      // Run a goes on: its first 600 rows settled, the next 150 fresh, read as one run.
      const more = await runAgent(
        Array.from({ length: a + 150 }, (_, i) => i),
        new Checkpoint(store, 'a', { workerId: 'wk', clock: store.clock }),
        (x) => x * 2,
      );
      expect(more.executed).toBe(150);
      expect(halves(store, 'a')).toEqual({ fresh: 150, settled: a });

      const all = stepKeys('a', 0, a + 150);
      for (const limit of [7, 100, 1000]) expect(await pagedKeys(store, 'a', limit)).toEqual(all);
      expect(await store.countCommitted('a')).toBe(a + 150);
      expect((await store.recentSteps('a', { limit: 160 })).map((r) => r.idemKey)).toEqual(all.slice(-160));
      expect((await store.listStepTimings('a', { limit: 610 })).map((r) => r.idemKey)).toEqual(all.slice(0, 610));
      expect((await store.searchCommitted('a', ':step:59')).map((r) => r.idemKey)).toEqual([
        'a:step:59',
        'a:step:590',
        'a:step:591',
        'a:step:592',
        'a:step:593',
        'a:step:594',
        'a:step:595',
        'a:step:596',
        'a:step:597',
        'a:step:598',
        'a:step:599',
      ]);
      expect((await store.stepTimingBuckets('a', { buckets: 3 })).map((r) => r.count)).toEqual([250, 250, 250]);
      expect(await store.lastCommittedAt('a')).toBe((await store.getCommitted('a:step:749'))!.committedAt);
      expect((await store.getCommitted('a:step:700'))?.resultJson).toBe('1400');
    } finally {
      await store.close();
    }
  });

  it("settles another writer's rows from the start, and a rerun moves a run's rows from both indexes", async () => {
    const store = openSqliteStore({ path: tempDir('waybill-fresh-').file('store.db'), synchronous: 'normal' });
    try {
      store.db
        .prepare('INSERT INTO committed (idem_key, run_id, result_json, committed_at, step) VALUES (?, ?, ?, ?, ?)')
        .run('outside:step:0', 'outside', '"x"', 1, 0);
      expect(halves(store, 'outside')).toEqual({ fresh: 0, settled: 1 });

      await store.createRun({ id: 'r', workflow: 'w', inputJson: '{}', totalSteps: 40 });
      expect((await store.claimRun({ workerId: 'wk', leaseMs: 60_000, workflows: ['w'] }))?.id).toBe('r');
      const checkpoint = new Checkpoint(store, 'r', { workerId: 'wk', clock: store.clock });
      await runAgent(
        Array.from({ length: 40 }, (_, i) => i),
        checkpoint,
        (x) => x,
      );
      // Half of the run settled by hand, as a settle mid-run leaves it.
      store.db.prepare("UPDATE committed SET fresh = NULL WHERE run_id = 'r' AND step < 20").run();
      // Step 25 with four keys, in both indexes: a rerun moves them to history in key order, as one index did.
      // Inserted settled, as any writer but a step's commit inserts (and its trigger counts), then two made fresh.
      const extra = store.db.prepare(
        "INSERT INTO committed (idem_key, run_id, result_json, committed_at, step) VALUES (?, 'r', '0', 1, 25)",
      );
      for (const key of ['r:z', 'r:b', 'r:a']) extra.run(key);
      store.db.prepare("UPDATE committed SET fresh = 1 WHERE idem_key IN ('r:b', 'r:a')").run();
      expect(halves(store, 'r')).toEqual({ fresh: 22, settled: 21 });
      expect(await store.finishRun('r', 'wk', { status: 'failed' })).toBe(true);

      const outcome = await store.rerunRun({
        runId: 'r',
        fromStep: 10,
        inputJson: null,
        actor: 't',
        reason: null,
        claimTtlMs: TTL,
      });
      expect(outcome.moved).toBe(33);
      expect((await store.readStep('r', 25)).history.map((h) => h.idemKey)).toEqual(['r:a', 'r:b', 'r:step:25', 'r:z']);
      expect(halves(store, 'r')).toEqual({ fresh: 0, settled: 10 });
      expect(await pagedKeys(store, 'r', 4)).toEqual(stepKeys('r', 0, 10));
      expect(await store.countCommitted('r')).toBe(10);

      const forked = await store.forkRun({
        runId: 'r',
        fromStep: 5,
        newId: 'f',
        inputJson: null,
        actor: 't',
        claimTtlMs: TTL,
      });
      expect(forked.moved).toBe(5);
      expect(halves(store, 'f')).toEqual({ fresh: 0, settled: 5 });
    } finally {
      await store.close();
    }
  });

  it('counts the rows left fresh by a process before this one, so short-lived workers still settle', async () => {
    const path = tempDir('waybill-fresh-').file('store.db');
    const steps = (store: SqliteStore, id: string, n: number) =>
      runAgent(
        Array.from({ length: n }, (_, i) => i),
        new Checkpoint(store, id, { workerId: 'wk', clock: store.clock }),
        (x) => x,
      );
    const first = openSqliteStore({ path, synchronous: 'normal' });
    await steps(first, 'short-1', SETTLE_EVERY - 10);
    expect(halves(first)).toEqual({ fresh: SETTLE_EVERY - 10, settled: 0 });
    await first.close();

    const second = openSqliteStore({ path, synchronous: 'normal' });
    try {
      await steps(second, 'short-2', 9);
      expect(halves(second)).toEqual({ fresh: SETTLE_EVERY - 1, settled: 0 });
      await steps(second, 'short-3', 1);
      expect(halves(second)).toEqual({ fresh: 0, settled: SETTLE_EVERY });
    } finally {
      await second.close();
    }
  });

  it('opens a store from before the layout with every row settled', async () => {
    const path = tempDir('waybill-fresh-').file('store.db');
    const db = sqliteBefore(path, '0030_committed_fresh');
    const insert = db.prepare(
      'INSERT INTO committed (idem_key, run_id, result_json, committed_at, step) VALUES (?, ?, ?, ?, ?)',
    );
    for (let i = 0; i < 30; i++) insert.run(`old:step:${i}`, 'old', String(i), i, i);
    db.prepare("INSERT INTO progress (run_id, step, state_json, updated_at) VALUES ('old', 30, '{}', 30)").run();
    db.close();

    const store = openSqliteStore({ path, synchronous: 'normal' });
    try {
      expect(halves(store)).toEqual({ fresh: 0, settled: 30 });
      expect(await pagedKeys(store, 'old', 8)).toEqual(stepKeys('old', 0, 30));
      // The progress trigger, rewritten for the two indexes, still counts a run's rows when its progress row is made.
      store.db.prepare("INSERT INTO progress (run_id, step, state_json, updated_at) VALUES ('late', 0, '{}', 1)").run();
      expect(
        store.db.prepare<[], { n: number }>("SELECT committed_count AS n FROM progress WHERE run_id = 'old'").get()!.n,
      ).toBe(30);
      await runAgent([0, 1, 2], new Checkpoint(store, 'late', { workerId: 'wk', clock: store.clock }), (x) => x);
      expect(halves(store, 'late')).toEqual({ fresh: 3, settled: 0 });
      store.db.prepare("DELETE FROM progress WHERE run_id = 'late'").run();
      store.db.prepare("INSERT INTO progress (run_id, step, state_json, updated_at) VALUES ('late', 3, '{}', 2)").run();
      expect(
        store.db.prepare<[], { n: number }>("SELECT committed_count AS n FROM progress WHERE run_id = 'late'").get()!.n,
      ).toBe(3);
    } finally {
      await store.close();
    }
  });
});
