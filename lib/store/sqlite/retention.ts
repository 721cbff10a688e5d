/**
 * Retention on SQLite: deletes finished runs' rows in short BEGIN IMMEDIATE transactions (each holds the
 * file's write lock, so each is kept to one batch). Each batch picks its runs afresh inside its transaction,
 * so a run retried or claimed since the last batch is no longer prunable, and is left alone.
 */

import type { PruneCounts, RetentionStore } from '../contract';
import { HAS_ROWS, PLAN_COUNTS, PRUNABLE_EXTERNAL, PRUNABLE_RUNS } from '../shared/sql';
import { committedRun } from './committed-rows';
import { guard, type SqliteConnection } from './connection';

const DEFAULT_BATCH = 500;
const RUNS = PRUNABLE_RUNS('@before');
const EXTERNAL = PRUNABLE_EXTERNAL('sqlite', '@before');
const IN_IDS = `(SELECT value FROM json_each(@ids))`;

export function sqliteRetention(c: SqliteConnection): RetentionStore {
  const { db } = c;
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
            : db
                .prepare(`DELETE FROM step_events WHERE id IN
          (SELECT id FROM step_events WHERE run_id IN ${IN_IDS} LIMIT @limit)`)
                .run({ ids, limit: batch - logs }).changes;
        const committed =
          batch - logs - events <= 0
            ? 0
            : db
                .prepare(`DELETE FROM committed WHERE rowid IN
          (SELECT rowid FROM committed WHERE ${committedRun(`IN ${IN_IDS}`)} LIMIT @limit)`)
                .run({ ids, limit: batch - logs - events }).changes;
        // Progress and the runs row only once a run has nothing else left.
        const progress = db
          .prepare(`DELETE FROM progress WHERE run_id IN ${IN_IDS} AND NOT ${HAS_ROWS('sqlite', 'progress.run_id')}`)
          .run({ ids }).changes;
        const runs = db
          .prepare(`DELETE FROM runs WHERE id IN ${IN_IDS} AND NOT ${HAS_ROWS('sqlite', 'runs.id')}
          AND NOT EXISTS (SELECT 1 FROM progress p WHERE p.run_id = runs.id)`)
          .run({ ids }).changes;
        // A removed run's waits, streamed text, tags and metadata go with it (decided long ago: the run was finished),
        // and its webhook deliveries once sent or given up: a pending one is still owed to its receiver.
        for (const [table, more] of [
          ['waits', ''],
          ['step_streams', ''],
          ['run_tags', ''],
          ['run_metadata', ''],
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
