/**
 * Retention on PostgreSQL, mirroring sqlite/retention.ts. A batch is one short transaction of a few
 * statements on one connection: the runs it prunes are locked FOR UPDATE SKIP LOCKED first, so an operator's
 * retry of one of them waits for the batch (and then finds it gone, or finds it finished with less history),
 * and two workers pruning at once split the runs instead of queueing on them. Outside clients' runs have no
 * runs row to lock: each pick of rows to delete re-checks that they still hold no claim. The committed rows and
 * events it deletes are folded into the metrics tally first (deleteCounted).
 *
 * A batch whose connection is lost is retried whole: every statement is re-decided, so a retry deletes
 * nothing twice; only the counts of an attempt that committed without an answer are lost (they are reported,
 * never relied on). The fragments shared with SQLite (shared/sql.ts) take `before` as $1; each statement's
 * values are listed where it runs.
 */
import type pg from 'pg';
import type { PruneCounts, PruneRequest, RetentionStore } from '../contract';
import { foldPlan } from '../shared/metrics-fold';
import { HAS_ROWS, PLAN_COUNTS, PRUNABLE_EXTERNAL, PRUNABLE_RUNS } from '../shared/sql';
import type { PgConnection } from './connection';
import { drive } from './plan';
import { withRetry } from './retry';

const DEFAULT_BATCH = 500;
const RUNS = PRUNABLE_RUNS('$1::float8');
const EXTERNAL = PRUNABLE_EXTERNAL('postgres', '$1::float8');
const NO_CLAIM = (id: string) => `NOT EXISTS (SELECT 1 FROM claims cl WHERE cl.run_id = ${id})`;

/** $1 before. */
const planSql = (external: boolean) => `WITH doomed (id, external) AS (
    SELECT id, false FROM (${RUNS}) r ${external ? `UNION ALL SELECT id, true FROM (${EXTERNAL}) x` : ''})
  ${PLAN_COUNTS('postgres', (flag) => String(flag))}`;

/** Each table's key, and how its doomed rows are picked: $1 the runs' ids, $2 how many at most. */
const DOOMED = {
  step_events: {
    key: 'id',
    type: 'bigint[]',
    pick: `SELECT id AS key FROM step_events WHERE run_id = ANY($1::text[]) AND ${NO_CLAIM('step_events.run_id')} LIMIT $2`,
  },
  committed: {
    key: 'idem_key',
    type: 'text[]',
    pick: `SELECT idem_key AS key FROM committed WHERE run_id = ANY($1::text[]) AND ${NO_CLAIM('committed.run_id')} LIMIT $2`,
  },
} as const;

/**
 * Deletes the rows `pick` finds, first folding what the metrics tally has not counted of them into it
 * (shared/metrics-fold.ts), in this transaction. The fold locks the tally's rows, so a second prune of the same
 * rows (outside clients' runs have no runs row to lock) waits, then counts and deletes only what is left.
 */
async function deleteCounted(
  client: pg.PoolClient,
  table: keyof typeof DOOMED,
  values: [ids: string[], limit: number],
): Promise<number> {
  const { key, type, pick } = DOOMED[table];
  const keys = (await client.query<{ key: string }>(pick, values)).rows.map((r) => r.key);
  if (keys.length === 0) return 0;
  const doomed = { sql: `${key} = ANY(CAST(? AS ${type}))`, params: [keys] };
  await drive(client, foldPlan('postgres', table === 'committed' ? { committed: doomed } : { events: doomed }));
  return (await client.query(`DELETE FROM ${table} WHERE ${key} = ANY($1::${type})`, [keys])).rowCount ?? 0;
}

async function batch(client: pg.PoolClient, request: PruneRequest): Promise<PruneCounts> {
  const size = request.batchSize ?? DEFAULT_BATCH;
  const pick = async (sql: string) =>
    (await client.query<{ id: string }>(sql, [request.before, size])).rows.map((r) => r.id);
  const runIds = await pick(`${RUNS} ORDER BY r.id COLLATE "C" LIMIT $2 FOR UPDATE OF r SKIP LOCKED`);
  const extIds = request.includeExternal ? await pick(`${EXTERNAL} ORDER BY 1 LIMIT $2`) : [];
  const ids = [...runIds, ...extIds];
  if (ids.length === 0) return { runs: 0, external: 0, committed: 0, events: 0, progress: 0, logs: 0 };

  // Log lines first, events next and committed last: a prune cut short keeps a run's keys (its
  // deduplication) longest. Each counts against the batch, so no transaction deletes more than it.
  const logs =
    (
      await client.query(
        `DELETE FROM run_logs WHERE (run_id, seq) IN (SELECT run_id, seq FROM run_logs
    WHERE run_id = ANY($1::text[]) AND ${NO_CLAIM('run_logs.run_id')} LIMIT $2)`,
        [ids, size],
      )
    ).rowCount ?? 0;
  const events = size - logs <= 0 ? 0 : await deleteCounted(client, 'step_events', [ids, size - logs]);
  const committed =
    size - logs - events <= 0 ? 0 : await deleteCounted(client, 'committed', [ids, size - logs - events]);
  // Progress and the runs row only once a run has nothing else left.
  const progress =
    (
      await client.query(
        `DELETE FROM progress WHERE run_id = ANY($1::text[])
    AND ${NO_CLAIM('progress.run_id')} AND NOT ${HAS_ROWS('postgres', 'progress.run_id')}`,
        [ids],
      )
    ).rowCount ?? 0;
  // A claim taken meanwhile (an outside client on a finished run) keeps the row too: without it the run would
  // show as an outside client's, running.
  const runs =
    (
      await client.query(
        `DELETE FROM runs WHERE id = ANY($1::text[]) AND NOT ${HAS_ROWS('postgres', 'runs.id')}
    AND ${NO_CLAIM('runs.id')} AND NOT EXISTS (SELECT 1 FROM progress p WHERE p.run_id = runs.id)`,
        [runIds],
      )
    ).rowCount ?? 0;
  // A removed run's waits, streamed text, tags, metadata and earlier starts go with it (decided long ago: the run
  // was finished), and its webhook deliveries once sent or given up: a pending one is still owed to its receiver.
  for (const [table, more] of [
    ['waits', ''],
    ['step_streams', ''],
    ['run_tags', ''],
    ['run_metadata', ''],
    ['earlier_starts', ''],
    ['webhook_deliveries', "AND status <> 'pending'"],
  ])
    await client.query(
      `DELETE FROM ${table} WHERE run_id = ANY($1::text[]) ${more} AND NOT EXISTS (SELECT 1 FROM runs r WHERE r.id = ${table}.run_id)`,
      [runIds],
    );
  const external =
    extIds.length === 0
      ? 0
      : (
          await client.query<{ n: number }>(
            `SELECT count(*)::int AS n
    FROM unnest($1::text[]) x (id) WHERE NOT ${HAS_ROWS('postgres', 'x.id')} AND NOT EXISTS (SELECT 1 FROM progress p WHERE p.run_id = x.id)`,
            [extIds],
          )
        ).rows[0]!.n;
  return { runs, external, committed, events, progress, logs };
}

export function postgresRetention(c: PgConnection): RetentionStore {
  return {
    async planPrune(request) {
      return (
        await withRetry('planPrune', () =>
          c.pool.query<PruneCounts>(planSql(Boolean(request.includeExternal)), [request.before]),
        )
      ).rows[0]!;
    },

    async pruneBatch(request) {
      return withRetry('prune', () => c.inTransaction((client) => batch(client, request)));
    },
  };
}
