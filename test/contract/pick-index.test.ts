/**
 * The run pick on SQLite walks runs_runnable (#17): behind 100,000 finished runs, a live queue and a hundred
 * running runs, EXPLAIN QUERY PLAN of the exact statement claimRun prepares names the partial index, reads no
 * other runs index and sorts nothing, and the pick takes the oldest queued run. (PostgreSQL's plan, with a million
 * finished runs: test/postgres/pick-plan.test.ts.)
 */
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../lib/clock';
import { openSqliteStore } from '../../lib/store/sqlite';
import { anyRunnable, RUNNABLE } from '../../lib/store/sqlite/runs';
import { makeTempDir } from '../support/tmp';

describe('the run pick on SQLite', () => {
  it('walks runs_runnable in order, past the live runs, never the finished ones', async () => {
    const dir = makeTempDir('waybill-pick-');
    const clock = new ManualClock();
    const store = openSqliteStore({ path: dir.file('pick.db'), clock, synchronous: 'normal' });
    try {
      const now = clock.now() / 1000;
      store.db.exec(`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 100000)
        INSERT INTO runs (id, workflow, input_json, status, created_at, updated_at, finished_at)
        SELECT 'done-' || i, 'wf', '{}', 'completed', i, i, i + 1 FROM n`);
      store.db.exec(`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 100)
        INSERT INTO runs (id, workflow, input_json, status, owner, lease_expires_at, attempts, created_at, updated_at)
        SELECT 'running-' || i, 'wf', '{}', 'running', 'w-live', ${now} + 30, 1, ${now} - 1000 + i, ${now} FROM n`);
      store.db.exec(`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 1000)
        INSERT INTO runs (id, workflow, input_json, status, created_at, updated_at)
        SELECT printf('queued-%04d', i), 'wf', '{}', 'queued', ${now} - 500 + i / 10.0, ${now} FROM n`);
      store.db.exec('ANALYZE');
      const params = { now, workflows: '["wf"]', holding: '[]', runId: null };
      const plan = (text: string) =>
        store.db
          .prepare(`EXPLAIN QUERY PLAN ${text}`)
          .all(params)
          .map((row) => (row as { detail: string }).detail);

      const pick = plan(RUNNABLE);
      expect(pick.filter((d) => /\bruns\b/.test(d) && !/json_each/.test(d))).toEqual([
        'SCAN runs USING INDEX runs_runnable',
      ]);
      expect(pick.filter((d) => /TEMP B-TREE/.test(d))).toEqual([]);
      expect(plan(anyRunnable()).filter((d) => /\bruns\b/.test(d))).toEqual(['SCAN runs USING INDEX runs_runnable']);

      expect(await store.claimRun({ workerId: 'w-2', leaseMs: 30_000, workflows: ['wf'] })).toMatchObject({
        id: 'queued-0001',
        status: 'running',
      });
    } finally {
      await store.close();
      dir.remove();
    }
  });
});
