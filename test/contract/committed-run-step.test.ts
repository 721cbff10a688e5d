/**
 * SQLite keeps a run's committed rows in two indexes on (run, step, key) (#29): committed_run_step holds the settled
 * rows, committed_fresh the ones committed since the last settle. A store made at the migration before 0026 keeps
 * every row when it opens, loses committed_run_order, and its committed pages, in (step, key) order with keyless
 * rows first, are the same read through the new indexes, each a seek of each, merged (bench/RESULTS.md).
 */
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { openSqliteStore } from '../../lib/store/sqlite';
import { committedPageAfter, firstCommittedPage } from '../../lib/store/sqlite/claims';
import { sqliteBefore } from '../support/sqlite-before';
import { tempDir } from '../support/tmp';

const ROWS: [key: string, step: number | null][] = [
  ['mixed:b', null],
  ['mixed:a', null],
  ['mixed:step:1', 1],
  ['mixed:retry', 1],
  ['mixed:step:0', 0],
  ['mixed:negative', -3],
  ['mixed:step:10', 10],
  ['mixed:step:2', 2],
];
// (step, key), NULL lowest: the order committed_run_order's coalesce(step, -1) gave these rows, less the negative step.
const ORDER = [
  'mixed:a',
  'mixed:b',
  'mixed:negative',
  'mixed:step:0',
  'mixed:retry',
  'mixed:step:1',
  'mixed:step:2',
  'mixed:step:10',
];

function storeAtPreviousMigration(path: string): void {
  const db = sqliteBefore(path, '0026_committed_one_run_index');
  const insert = db.prepare(
    'INSERT INTO committed (idem_key, run_id, result_json, committed_at, step, source) VALUES (?, ?, ?, ?, ?, ?)',
  );
  for (const [i, [key, step]] of ROWS.entries()) insert.run(key, 'mixed', JSON.stringify(i), 100 + i, step, 'executed');
  insert.run('other:step:0', 'other', '"x"', 200, 0, 'manual');
  db.close();
}

const indexes = (db: Database.Database) =>
  db
    .prepare<[], { name: string; sql: string }>(
      "SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name = 'committed' AND sql IS NOT NULL ORDER BY name",
    )
    .all();

describe('committed_run_step on SQLite', () => {
  it('migrates a store from the migration before it with every row, and pages it in (step, key) order', async () => {
    const path = tempDir('waybill-run-step-').file('store.db');
    storeAtPreviousMigration(path);
    const before = new Database(path, { readonly: true });
    expect(indexes(before).map((i) => i.name)).toContain('committed_run_order');
    before.close();

    const store = openSqliteStore({ path, synchronous: 'normal' });
    try {
      expect(indexes(store.db)).toEqual([
        { name: 'committed_at', sql: expect.any(String) },
        {
          name: 'committed_fresh',
          sql: 'CREATE INDEX `committed_fresh` ON `committed` (`run_id`,`step`) WHERE fresh IS NOT NULL',
        },
        { name: 'committed_not_executed', sql: expect.any(String) },
        {
          name: 'committed_run_step',
          sql: 'CREATE INDEX `committed_run_step` ON `committed` (`run_id`,`step`,`idem_key`) WHERE fresh IS NULL',
        },
      ]);
      const all = await store.listCommitted('mixed');
      expect(all.map((r) => r.idemKey)).toEqual(ORDER);
      expect(all.map((r) => r.resultJson)).toEqual(
        ORDER.map((key) => JSON.stringify(ROWS.findIndex(([k]) => k === key))),
      );
      expect(await store.getCommitted('other:step:0')).toMatchObject({ runId: 'other', source: 'manual' });
      expect(await store.countCommitted('mixed')).toBe(ROWS.length);

      // Every keyset page size walks the same order: after a keyless cursor, a negative step, a step with two keys.
      for (const limit of [1, 2, 3, 5]) {
        const seen: string[] = [];
        let afterKey: string | undefined;
        for (;;) {
          const page = await store.listCommitted('mixed', { afterKey, limit });
          if (page.length === 0) break;
          seen.push(...page.map((r) => r.idemKey));
          afterKey = page.at(-1)!.idemKey;
        }
        expect(seen).toEqual(ORDER);
      }
      expect(await store.listCommitted('mixed', { afterKey: 'no-such-key' })).toEqual([]);
      expect((await store.recentSteps('mixed', { limit: 3 })).map((r) => r.idemKey)).toEqual(ORDER.slice(-3));
      expect((await store.listStepTimings('mixed', { limit: 4 })).map((r) => r.idemKey)).toEqual(ORDER.slice(0, 4));
      expect((await store.searchCommitted('mixed', 'step:1')).map((r) => r.idemKey)).toEqual([
        'mixed:step:1',
        'mixed:step:10',
      ]);
    } finally {
      await store.close();
    }
  });

  it('reads a page of a 20,000-step run from its two indexes, merged, without sorting the run', async () => {
    const path = tempDir('waybill-run-step-').file('store.db');
    const store = openSqliteStore({ path, synchronous: 'normal' });
    try {
      store.db.exec(`WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 19999)
        INSERT INTO committed (idem_key, run_id, result_json, committed_at, step, fresh)
        SELECT 'big:step:' || i, 'big', '1', i, i, CASE WHEN i >= 19990 THEN 1 END FROM n`);
      store.db.exec('ANALYZE');
      const plan = (text: string, params: unknown[]) =>
        store.db
          .prepare(`EXPLAIN QUERY PLAN ${text}`)
          .all(...params)
          .map((row) => (row as { detail: string }).detail);
      const seek = 'SEARCH committed USING INDEX committed_run_step';
      const fresh = 'SEARCH committed USING INDEX committed_fresh';
      const byKey = 'SEARCH committed USING INDEX sqlite_autoindex_committed_1 (idem_key=?)';
      const values = (names: readonly string[]) =>
        names.map((n) => (n === 'runId' ? 'big' : n === 'limit' ? 3 : 'big:step:15000'));
      expect(plan(firstCommittedPage.positional, values(firstCommittedPage.names))).toEqual([
        'MERGE (UNION ALL)',
        'LEFT',
        `${fresh} (run_id=?)`,
        'USE TEMP B-TREE FOR LAST TERM OF ORDER BY',
        'RIGHT',
        `${seek} (run_id=?)`,
      ]);
      // Each branch a range of each index, read in its order (the fresh rows of one step sorted by key, the plan
      // naming that sort after the fresh arm's cursor lookup); what is sorted then is the branches' pages
      // (subqueries of at most `limit` rows each), merged.
      const after = plan(committedPageAfter.positional, values(committedPageAfter.names));
      expect(after.filter((d) => /\bcommitted\b/.test(d))).toEqual([
        `${fresh} (run_id=? AND step=?)`,
        byKey,
        `${seek} (run_id=? AND step=? AND idem_key>?)`,
        byKey,
        `${fresh} (run_id=? AND step>?)`,
        byKey,
        `${seek} (run_id=? AND step>?)`,
        byKey,
      ]);
      const sorted = after.flatMap((d, i) => (/TEMP B-TREE/.test(d) ? [after[i - 1]] : []));
      expect(sorted).toEqual([byKey, 'SCAN (subquery-4)', 'REUSE SUBQUERY 6', 'SCAN (subquery-9)']);
      const deep = await store.listCommitted('big', { afterKey: 'big:step:15000', limit: 3 });
      expect(deep.map((r) => r.step)).toEqual([15001, 15002, 15003]);
      // Across the two: the last settled rows, then the fresh ones, in one order.
      const edge = await store.listCommitted('big', { afterKey: 'big:step:19987', limit: 4 });
      expect(edge.map((r) => r.step)).toEqual([19988, 19989, 19990, 19991]);
      expect((await store.recentSteps('big', { limit: 12 })).map((r) => r.step)).toEqual(
        Array.from({ length: 12 }, (_, i) => 19988 + i),
      );
    } finally {
      await store.close();
    }
  });
});
