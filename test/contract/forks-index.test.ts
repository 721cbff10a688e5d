/**
 * A run's forks (its run page's "forked into" list, shared/step-reads.ts forksPlan) on both backends: the forks of
 * that run only, oldest first, at most 20. On SQLite the statement is a seek of runs_forked, the partial index of
 * the runs that are forks, where it read every runs row before.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../lib/clock';
import { forksPlan } from '../../lib/store/shared/step-reads';
import { openSqliteStore } from '../../lib/store/sqlite';
import { backends, type StoreHandle } from '../support/backends';
import { makeTempDir } from '../support/tmp';

const list = await backends();

/** `n` runs rows, `forks` of them forks of `of` (created at 1000 + i), the rest plain. */
const runsSql = (n: number, of: string, forks: number) => `INSERT INTO runs
  (id, workflow, input_json, status, created_at, updated_at, forked_from_run, forked_at_step)
  VALUES ${Array.from({ length: n }, (_, i) =>
    i < forks
      ? `('fork-${String(i).padStart(2, '0')}', 'wf', '{}', 'queued', ${1000 + (i % 7)}, 1, '${of}', ${i})`
      : `('plain-${i}', 'wf', '{}', 'completed', ${i}, ${i}, NULL, NULL)`,
  ).join(', ')}`;

describe.each(list)('a run forks on $name', (backend) => {
  let h: StoreHandle;
  beforeEach(async () => {
    h = await backend.open();
  });
  afterEach(() => h.close());

  it('lists the forks of that run only, oldest first then by id, at most 20', async () => {
    await h.exec(runsSql(40, 'orig', 25));
    await h.exec(`UPDATE runs SET forked_from_run = 'other' WHERE id = 'fork-03'`);
    const forks = await h.store.listForks('orig');
    const expected = Array.from({ length: 25 }, (_, i) => ({ id: `fork-${String(i).padStart(2, '0')}`, at: i % 7 }))
      .filter((f) => f.id !== 'fork-03')
      .sort((a, b) => a.at - b.at || (a.id < b.id ? -1 : 1))
      .slice(0, 20)
      .map((f) => f.id);
    expect(forks.map((f) => f.id)).toEqual(expected);
    expect(forks[0]).toEqual({ id: 'fork-00', forkedAtStep: 0, createdAt: 1000 });
    expect(await h.store.listForks('plain-30')).toEqual([]);
  });
});

describe('a run forks on SQLite, behind 10,000 runs', () => {
  it('are a seek of runs_forked, not a pass over runs', async () => {
    const dir = makeTempDir('waybill-forks-');
    const store = openSqliteStore({ path: dir.file('forks.db'), clock: new ManualClock(), synchronous: 'normal' });
    try {
      store.db.exec(`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 10000)
        INSERT INTO runs (id, workflow, input_json, status, created_at, updated_at)
        SELECT 'done-' || i, 'wf', '{}', 'completed', i, i FROM n`);
      store.db.exec(runsSql(3, 'done-1', 3));
      store.db.exec('ANALYZE');
      const read = forksPlan('done-1').next().value as { sql: string; params: unknown[] };
      const plan = store.db
        .prepare(`EXPLAIN QUERY PLAN ${read.sql}`)
        .all(...read.params)
        .map((row) => (row as { detail: string }).detail);
      expect(plan).toEqual(['SEARCH runs USING INDEX runs_forked (forked_from_run=?)']);
    } finally {
      await store.close();
      dir.remove();
    }
  });
});
