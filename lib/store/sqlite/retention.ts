/**
 * Retention on SQLite: deletes finished runs' rows in short BEGIN IMMEDIATE transactions (each holds the
 * file's write lock, so each is kept to one batch). Each batch picks its runs afresh inside its transaction,
 * so a run retried or claimed since the last batch is no longer prunable, and is left alone. The committed
 * rows and events it deletes are folded into the metrics tally first (deleteCounted).
 */

import type { PruneCounts, RetentionStore } from '../contract';
import { foldPlan } from '../shared/metrics-fold';
import { HAS_ROWS, PLAN_COUNTS, PRUNABLE_EXTERNAL, PRUNABLE_RUNS } from '../shared/sql';
import { committedRun } from './committed-rows';
import { guard, type SqliteConnection } from './connection';
import { drive } from './plan';

const DEFAULT_BATCH = 500;
const RUNS = PRUNABLE_RUNS('@before');
const EXTERNAL = PRUNABLE_EXTERNAL('sqlite', '@before');
const IN_IDS = `(SELECT value FROM json_each(@ids))`;

export function sqliteRetention(c: SqliteConnection): RetentionStore {
  const { db } = c;

  /**
   * Deletes rows of committed (by rowid) or step_events (by id), first folding what the metrics tally has not
   * counted of them into it (shared/metrics-fold.ts), inside the caller's transaction.
   */
  function deleteCounted(table: 'committed' | 'step_events', ids: number[]): number {
    if (ids.length === 0) return 0;
    const doomed = {
      sql: `${table === 'committed' ? 'rowid' : 'id'} IN (SELECT value FROM json_each(?))`,
      params: [JSON.stringify(ids)],
    };
    drive(c, foldPlan('sqlite', table === 'committed' ? { committed: doomed } : { events: doomed }));
    return c.prepared(`DELETE FROM ${table} WHERE ${doomed.sql}`).run(...doomed.params).changes;
  }

  return {
    async planPrune(request) {
      const ext = request.includeExternal ? `UNION ALL SELECT id, 1 FROM (${EXTERNAL})` : '';
      return guard(
        () =>
          db
            .prepare<[{ before: number }], PruneCounts>(`
        WITH doomed (id, external) AS (SELECT id, 0 FROM (${RUNS}) ${ext})
        ${PLAN_COUNTS('sqlite', (flag) => (flag ? '1' : '0'))}`)
            .get({ before: request.before })!,
      );
    },

    async pruneBatch(request) {
      const batch = request.batchSize ?? DEFAULT_BATCH;
      return c.tx((): PruneCounts => {
        const pick = (sql: string) =>
          db
            .prepare<[{ before: number; batch: number }], { id: string }>(`${sql} ORDER BY 1 LIMIT @batch`)
            .all({ before: request.before, batch })
            .map((r) => r.id);
        const runIds = pick(RUNS);
        const extIds = request.includeExternal ? pick(EXTERNAL) : [];
        const ids = JSON.stringify([...runIds, ...extIds]);
        if (runIds.length + extIds.length === 0)
          return { runs: 0, external: 0, committed: 0, events: 0, progress: 0, logs: 0 };

        // Log lines first, events next and committed last: a prune cut short keeps a run's keys (its
        // deduplication) longest. Each counts against the batch, so no transaction deletes more than it.
        const logs = db
          .prepare(`DELETE FROM run_logs WHERE rowid IN
          (SELECT rowid FROM run_logs WHERE run_id IN ${IN_IDS} LIMIT @limit)`)
          .run({ ids, limit: batch }).changes;
        const events =
          batch - logs <= 0
            ? 0
            : deleteCounted(
                'step_events',
                db
                  .prepare(`SELECT id FROM step_events WHERE run_id IN ${IN_IDS} LIMIT @limit`)
                  .pluck()
                  .all({ ids, limit: batch - logs }) as number[],
              );
        const committed =
          batch - logs - events <= 0
            ? 0
            : deleteCounted(
                'committed',
                db
                  .prepare(`SELECT rowid FROM committed WHERE ${committedRun(`IN ${IN_IDS}`)} LIMIT @limit`)
                  .pluck()
                  .all({ ids, limit: batch - logs - events }) as number[],
              );
        // Progress and the runs row only once a run has nothing else left.
        const progress = db
          .prepare(`DELETE FROM progress WHERE run_id IN ${IN_IDS} AND NOT ${HAS_ROWS('sqlite', 'progress.run_id')}`)
          .run({ ids }).changes;
        const runs = db
          .prepare(`DELETE FROM runs WHERE id IN ${IN_IDS} AND NOT ${HAS_ROWS('sqlite', 'runs.id')}
          AND NOT EXISTS (SELECT 1 FROM progress p WHERE p.run_id = runs.id)`)
          .run({ ids }).changes;
        // A removed run's waits, streamed text, tags, metadata and earlier starts go with it (decided long ago: the
        // run was finished), and its webhook deliveries once sent or given up: a pending one is still owed to its receiver.
        for (const [table, more] of [
          ['waits', ''],
          ['step_streams', ''],
          ['run_tags', ''],
          ['run_metadata', ''],
          ['earlier_starts', ''],
          ['webhook_deliveries', "AND status <> 'pending'"],
        ])
          db.prepare(
            `DELETE FROM ${table} WHERE run_id IN ${IN_IDS} ${more} AND NOT EXISTS (SELECT 1 FROM runs r WHERE r.id = ${table}.run_id)`,
          ).run({ ids });
        const external =
          extIds.length === 0
            ? 0
            : db
                .prepare<[{ ids: string }], { n: number }>(`
          SELECT count(*) AS n FROM json_each(@ids) x WHERE NOT ${HAS_ROWS('sqlite', 'x.value')}
            AND NOT EXISTS (SELECT 1 FROM progress p WHERE p.run_id = x.value)`)
                .get({ ids: JSON.stringify(extIds) })!.n;
        return { runs, external, committed, events, progress, logs };
      });
    },
  };
}
