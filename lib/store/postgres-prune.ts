/**
 * Retention on PostgreSQL, mirroring sqlite-prune.ts. A batch is one short transaction of a few statements
 * on one connection: the runs it prunes are locked FOR UPDATE SKIP LOCKED first, so an operator's retry of
 * one of them waits for the batch (and then finds it gone, or finds it finished with less history), and two
 * workers pruning at once split the runs instead of queueing on them. Outside clients' runs have no runs
 * row to lock: each delete re-checks that they still hold no claim.
 *
 * A batch whose connection is lost is retried whole: every statement is re-decided, so a retry deletes
 * nothing twice; only the counts of an attempt that committed without an answer are lost (they are reported,
 * never relied on).
 */
import type pg from 'pg';
import { withRetry } from './postgres-retry';
import { PostgresRunStore } from './postgres-runs';
import type { PruneCounts, PruneRequest, RetentionStore } from './types';

const DEFAULT_BATCH = 500;

/** $1 before (epoch s). Finished runs before it with no claim (a claim, even orphaned, is an open question). */
const PRUNABLE_RUNS = `SELECT r.id FROM runs r
  WHERE r.status IN ('completed', 'failed', 'cancelled') AND coalesce(r.finished_at, r.updated_at) < $1::float8
    AND NOT EXISTS (SELECT 1 FROM claims c WHERE c.run_id = r.id)`;

/** $1 before. Outside clients' runs (no runs row) whose every row was written before it, with no claim. */
const PRUNABLE_EXTERNAL = `SELECT x.run_id AS id FROM (
    SELECT run_id FROM progress UNION SELECT run_id FROM committed UNION SELECT run_id FROM step_events) x
  WHERE NOT EXISTS (SELECT 1 FROM runs r WHERE r.id = x.run_id)
    AND NOT EXISTS (SELECT 1 FROM claims c WHERE c.run_id = x.run_id)
    AND coalesce((SELECT updated_at FROM progress p WHERE p.run_id = x.run_id), 0) < $1::float8
    AND coalesce((SELECT max(committed_at) FROM committed c WHERE c.run_id = x.run_id), 0) < $1::float8
    AND coalesce((SELECT max(at) FROM step_events e WHERE e.run_id = x.run_id), 0) < $1::float8`;

const NO_CLAIM = (id: string) => `NOT EXISTS (SELECT 1 FROM claims cl WHERE cl.run_id = ${id})`;
const HAS_ROWS = (id: string) => `(EXISTS (SELECT 1 FROM committed c WHERE c.run_id = ${id})
  OR EXISTS (SELECT 1 FROM step_events e WHERE e.run_id = ${id}))`;

/** $1 before. */
const planSql = (external: boolean) => `WITH doomed (id, external) AS (
    SELECT id, false FROM (${PRUNABLE_RUNS}) r ${external ? `UNION ALL SELECT id, true FROM (${PRUNABLE_EXTERNAL}) x` : ''})
  SELECT (SELECT count(*) FROM doomed WHERE NOT external)::int AS runs,
    (SELECT count(*) FROM doomed WHERE external)::int AS external,
    (SELECT count(*) FROM committed WHERE run_id IN (SELECT id FROM doomed))::int AS committed,
    (SELECT count(*) FROM step_events WHERE run_id IN (SELECT id FROM doomed))::int AS events,
    (SELECT count(*) FROM progress WHERE run_id IN (SELECT id FROM doomed))::int AS progress`;

export abstract class PostgresPrune extends PostgresRunStore implements RetentionStore {
  async planPrune(request: PruneRequest): Promise<PruneCounts> {
    return (await this.query<PruneCounts>(undefined, planSql(Boolean(request.includeExternal)), [request.before])).rows[0]!;
  }

  async pruneBatch(request: PruneRequest): Promise<PruneCounts> {
    return withRetry('prune', () => this.inTransaction((client) => this.batch(client, request)));
  }

  private async batch(client: pg.PoolClient, request: PruneRequest): Promise<PruneCounts> {
    const batch = request.batchSize ?? DEFAULT_BATCH;
    const pick = async (sql: string) =>
      (await client.query<{ id: string }>(sql, [request.before, batch])).rows.map((r) => r.id);
    const runIds = await pick(`${PRUNABLE_RUNS} ORDER BY r.id COLLATE "C" LIMIT $2 FOR UPDATE OF r SKIP LOCKED`);
    const extIds = request.includeExternal ? await pick(`${PRUNABLE_EXTERNAL} ORDER BY 1 LIMIT $2`) : [];
    const ids = [...runIds, ...extIds];
    if (ids.length === 0) return { runs: 0, external: 0, committed: 0, events: 0, progress: 0 };

    // Events first and committed after: a prune cut short keeps a run's keys (its deduplication) longest.
    const events = (await client.query(`DELETE FROM step_events WHERE id IN (SELECT id FROM step_events
      WHERE run_id = ANY($1::text[]) AND ${NO_CLAIM('step_events.run_id')} LIMIT $2)`, [ids, batch])).rowCount ?? 0;
    const committed = batch - events <= 0 ? 0 : (await client.query(`DELETE FROM committed WHERE idem_key IN
      (SELECT idem_key FROM committed WHERE run_id = ANY($1::text[]) AND ${NO_CLAIM('committed.run_id')} LIMIT $2)`,
    [ids, batch - events])).rowCount ?? 0;
    // Progress and the runs row only once a run has nothing else left.
    const progress = (await client.query(`DELETE FROM progress WHERE run_id = ANY($1::text[])
      AND ${NO_CLAIM('progress.run_id')} AND NOT ${HAS_ROWS('progress.run_id')}`, [ids])).rowCount ?? 0;
    // A claim taken meanwhile (an outside client on a finished run) keeps the row too: without it the run would
    // show as an outside client's, running.
    const runs = (await client.query(`DELETE FROM runs WHERE id = ANY($1::text[]) AND NOT ${HAS_ROWS('runs.id')}
      AND ${NO_CLAIM('runs.id')} AND NOT EXISTS (SELECT 1 FROM progress p WHERE p.run_id = runs.id)`, [runIds])).rowCount ?? 0;
    const external = extIds.length === 0 ? 0 : (await client.query<{ n: number }>(`SELECT count(*)::int AS n
      FROM unnest($1::text[]) x (id) WHERE NOT ${HAS_ROWS('x.id')} AND NOT EXISTS (SELECT 1 FROM progress p WHERE p.run_id = x.id)`,
    [extIds])).rows[0]!.n;
    return { runs, external, committed, events, progress };
  }
}
