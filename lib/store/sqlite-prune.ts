/**
 * Retention on SQLite: deletes finished runs' rows in short BEGIN IMMEDIATE transactions (each holds the
 * file's write lock, so each is kept to one batch). Each batch picks its runs afresh inside its transaction,
 * so a run retried or claimed since the last batch is no longer prunable, and is left alone.
 */
import { guard } from './sqlite-base';
import { SqliteRunStore } from './sqlite-runs';
import type { PruneCounts, PruneRequest, RetentionStore } from './types';

const DEFAULT_BATCH = 500;

/** Finished runs before @before with no claim (a claim, even orphaned, is an operator's open question). */
const PRUNABLE_RUNS = `SELECT r.id FROM runs r
  WHERE r.status IN ('completed', 'failed', 'cancelled') AND coalesce(r.finished_at, r.updated_at) < @before
    AND NOT EXISTS (SELECT 1 FROM claims c WHERE c.run_id = r.id)`;

/** Outside clients' runs (no runs row) whose every row was written before @before, with no claim. */
const PRUNABLE_EXTERNAL = `SELECT x.run_id AS id FROM (
    SELECT run_id FROM progress UNION SELECT run_id FROM committed UNION SELECT run_id FROM step_events) x
  WHERE NOT EXISTS (SELECT 1 FROM runs r WHERE r.id = x.run_id)
    AND NOT EXISTS (SELECT 1 FROM claims c WHERE c.run_id = x.run_id)
    AND coalesce((SELECT updated_at FROM progress p WHERE p.run_id = x.run_id), 0) < @before
    AND coalesce((SELECT max(committed_at) FROM committed c WHERE c.run_id = x.run_id), 0) < @before
    AND coalesce((SELECT max(at) FROM step_events e WHERE e.run_id = x.run_id), 0) < @before`;

const IN_IDS = `(SELECT value FROM json_each(@ids))`;
const HAS_ROWS = (id: string) => `(EXISTS (SELECT 1 FROM committed c WHERE c.run_id = ${id})
  OR EXISTS (SELECT 1 FROM step_events e WHERE e.run_id = ${id}))`;

export abstract class SqlitePrune extends SqliteRunStore implements RetentionStore {
  async planPrune(request: PruneRequest): Promise<PruneCounts> {
    const ext = request.includeExternal ? `UNION ALL SELECT id, 1 FROM (${PRUNABLE_EXTERNAL})` : '';
    return guard(() => this.db.prepare<[{ before: number }], PruneCounts>(`
      WITH doomed (id, external) AS (SELECT id, 0 FROM (${PRUNABLE_RUNS}) ${ext})
      SELECT (SELECT count(*) FROM doomed WHERE external = 0) AS runs,
        (SELECT count(*) FROM doomed WHERE external = 1) AS external,
        (SELECT count(*) FROM committed WHERE run_id IN (SELECT id FROM doomed)) AS committed,
        (SELECT count(*) FROM step_events WHERE run_id IN (SELECT id FROM doomed)) AS events,
        (SELECT count(*) FROM progress WHERE run_id IN (SELECT id FROM doomed)) AS progress`)
      .get({ before: request.before })!);
  }

  async pruneBatch(request: PruneRequest): Promise<PruneCounts> {
    const batch = request.batchSize ?? DEFAULT_BATCH;
    return this.tx((): PruneCounts => {
      const pick = (sql: string) => this.db.prepare<[{ before: number; batch: number }], { id: string }>(
        `${sql} ORDER BY 1 LIMIT @batch`).all({ before: request.before, batch }).map((r) => r.id);
      const runIds = pick(PRUNABLE_RUNS);
      const extIds = request.includeExternal ? pick(PRUNABLE_EXTERNAL) : [];
      const ids = JSON.stringify([...runIds, ...extIds]);
      if (runIds.length + extIds.length === 0) return { runs: 0, external: 0, committed: 0, events: 0, progress: 0 };

      // Events first and committed after: a prune cut short keeps a run's keys (its deduplication) longest.
      const events = this.db.prepare(`DELETE FROM step_events WHERE id IN
        (SELECT id FROM step_events WHERE run_id IN ${IN_IDS} LIMIT @limit)`).run({ ids, limit: batch }).changes;
      const committed = batch - events <= 0 ? 0 : this.db.prepare(`DELETE FROM committed WHERE rowid IN
        (SELECT rowid FROM committed WHERE run_id IN ${IN_IDS} LIMIT @limit)`).run({ ids, limit: batch - events }).changes;
      // Progress and the runs row only once a run has nothing else left.
      const progress = this.db.prepare(`DELETE FROM progress WHERE run_id IN ${IN_IDS} AND NOT ${HAS_ROWS('progress.run_id')}`)
        .run({ ids }).changes;
      const runs = this.db.prepare(`DELETE FROM runs WHERE id IN ${IN_IDS} AND NOT ${HAS_ROWS('runs.id')}
        AND NOT EXISTS (SELECT 1 FROM progress p WHERE p.run_id = runs.id)`).run({ ids }).changes;
      const external = extIds.length === 0 ? 0 : this.db.prepare<[{ ids: string }], { n: number }>(`
        SELECT count(*) AS n FROM json_each(@ids) x WHERE NOT ${HAS_ROWS('x.value')}
          AND NOT EXISTS (SELECT 1 FROM progress p WHERE p.run_id = x.value)`).get({ ids: JSON.stringify(extIds) })!.n;
      return { runs, external, committed, events, progress };
    });
  }
}
