/**
 * The metrics scrape on PostgreSQL, mirroring sqlite/metrics.ts: counts and histograms computed by the
 * database at scrape time, buckets counted with SUM(CASE …) so no rows are loaded. Counts come back as
 * int or float8 (count(*) and sum() of int are bigint/numeric, which pg would hand over as strings).
 * The small reads run side by side on the pool, each with its own snapshot: a scrape is a sample. What only
 * grows (steps, step durations) is the stored tally plus the rows past its marks (shared/metrics-tally.ts),
 * read in one snapshot and counted only up to rows settled for SETTLE_MS, so it lags that much; the scrape
 * only reads it, the workers advance it (advanceMetricsTally).
 *
 * The statements stay positional text, every statement's values listed beside it; the histogram's bounds are
 * written into the text (shared/sql.ts).
 */
import type pg from 'pg';
import type { InsightStore, MetricOutcome, MetricsSnapshot, MetricsTallyStore } from '../contract';
import { claimExpiresAtText } from '../shared/claim-expiry-sql';
import type { HistogramRow } from '../shared/histogram';
import { COUNT_COMMITTED, COUNT_EVENTS, MetricsTally, TALLY_MARKS, type TallyRow } from '../shared/metrics-tally';
import { EMPTY_BY_STATUS, STATUS_SQL } from '../shared/sql';
import { TALLY } from './columns';
import { dbNowText, type PgConnection } from './connection';
import { withRetry } from './retry';

const STATUSES = STATUS_SQL('postgres');
const NOW = dbNowText('$1');

/** $1 skew, $2 claim TTL s. */
const CLAIMS_SQL = `SELECT count(*)::int AS total,
  coalesce(sum(CASE WHEN ${claimExpiresAtText('$2::float8')} <= ${NOW} THEN 1 ELSE 0 END), 0)::int AS orphaned
  FROM claims`;

/** $1 skew. */
const WORKERS_SQL = `SELECT id, ${NOW} - heartbeat_at AS "heartbeatAgeSeconds" FROM workers
  WHERE stopped_at IS NULL ORDER BY id COLLATE "C"`;

/** How old a row must be before it is counted: older than any commit still in flight (each is one statement). */
const SETTLE_MS = 10_000;

/** Rows of each table read per chunk (with every row sharing the last one's time). */
const CHUNK_ROWS = 50_000;

/** $1 skew, $2 settle s: the time up to which rows are counted. */
const CUTOFF = `SELECT ${NOW} - $2::float8 AS t`;
/** $1 bounds. */
const LOAD_TALLY = `SELECT ${TALLY} FROM metrics_tally WHERE bounds = $1`;
/** $1 bounds, $2 steps, $3 durations: a row to lock, so the first advance of new bounds has one too. */
const ENSURE_TALLY = `INSERT INTO metrics_tally (bounds, steps_json, durations_json) VALUES ($1, $2, $3) ON CONFLICT (bounds) DO NOTHING`;
/** $1 bounds. */
const LOCK_TALLY = `${LOAD_TALLY} FOR UPDATE`;
/** $1 bounds, $2 committed mark, $3 events mark, $4 steps, $5 durations. */
const SAVE_TALLY = `UPDATE metrics_tally SET committed_mark = $2, events_mark = $3, steps_json = $4, durations_json = $5
  WHERE bounds = $1`;

/** Each table's mark column (shared/metrics-tally.ts), and where the tally keeps its mark. */
const TABLES = {
  committed: { column: TALLY_MARKS.postgres.committed, mark: 'committedMark' },
  step_events: { column: TALLY_MARKS.postgres.events, mark: 'eventsMark' },
} as const;

export function postgresMetrics(c: PgConnection): Pick<InsightStore, 'metricsSnapshot'> & MetricsTallyStore {
  const raw = <R extends pg.QueryResultRow>(text: string, values: unknown[]) =>
    withRetry('metrics', () => c.pool.query<R>(text, values));
  /**
   * What this process's scrapes counted, by bounds: the stored row they started from (its JSON, '' for none)
   * and the tally as they left it. The next scrape carries on from it while the stored row is the same.
   */
  const counted = new Map<string, { stored: string; tally: MetricsTally }>();

  /**
   * Counts what the stored tally has not, and saves nothing: one REPEATABLE READ, READ ONLY transaction, so
   * the stored row and the rows past its marks are read from one snapshot (a prune folding rows into the
   * row and deleting them is seen whole or not at all), chunk after chunk.
   */
  function count(boundsMs: readonly number[], settle: number): Promise<MetricsTally> {
    const key = MetricsTally.key(boundsMs);
    return withRetry('metrics', () =>
      c.inTransaction(async (client) => {
        await client.query('SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY');
        const row = (await client.query<TallyRow>(LOAD_TALLY, [key])).rows[0];
        const stored = row ? JSON.stringify(row) : '';
        const mine = counted.get(key);
        const tally = mine?.stored === stored ? mine.tally.clone() : MetricsTally.load(boundsMs, row);
        const cutoff = await cutoffOf(client, settle);
        let done = false;
        while (!done) done = await chunk(client, tally, cutoff);
        counted.set(key, { stored, tally });
        return tally;
      }),
    );
  }

  async function cutoffOf(client: pg.PoolClient, settle: number): Promise<number> {
    return (await client.query<{ t: number }>(CUTOFF, [c.skew(), settle])).rows[0]!.t;
  }

  /** One chunk of each table past the tally's marks, up to `cutoff`; true once both have reached it. */
  async function chunk(client: pg.PoolClient, tally: MetricsTally, cutoff: number): Promise<boolean> {
    const committedDone = await advance(client, tally, 'committed', cutoff);
    return (await advance(client, tally, 'step_events', cutoff)) && committedDone;
  }

  /**
   * Reads one chunk of a table past its mark: committed rows by committed_at, events by at (both indexed), in
   * (mark, cutoff], the cutoff `settle` seconds ago by the database clock. Times are taken when a statement
   * starts, not when it commits, so the newest rows may become visible out of order; none is older than the
   * settle time. Ids are no better: an event's id is taken at insert, after its time, so a lower id can carry
   * a later time, and a mark on ids would skip it for good. A chunk ends at the time of its CHUNK_ROWS-th row,
   * with every row of that time, so no time is split between two chunks. True once it reached the cutoff.
   */
  async function advance(
    client: pg.PoolClient,
    tally: MetricsTally,
    table: keyof typeof TABLES,
    cutoff: number,
  ): Promise<boolean> {
    const { column, mark } = TABLES[table];
    const from = Number.isFinite(tally[mark]) ? tally[mark] : null;
    const range = `($1::float8 IS NULL OR ${column} > $1) AND ${column} <= $2`;
    const end = (
      await client.query<{ t: number }>(
        `SELECT ${column} AS t FROM ${table} WHERE ${range} ORDER BY ${column} OFFSET ${CHUNK_ROWS - 1} LIMIT 1`,
        [from, cutoff],
      )
    ).rows[0]?.t;
    const hi = end ?? cutoff;
    if (table === 'committed') {
      const { rows } = await client.query<HistogramRow & { executed: number }>(
        COUNT_COMMITTED('postgres', tally.boundsMs, range),
        [from, hi],
      );
      tally.addCommitted(rows[0]);
    } else {
      const { rows } = await client.query<HistogramRow & { outcome: MetricOutcome; count: number }>(
        COUNT_EVENTS('postgres', tally.boundsMs, range),
        [from, hi],
      );
      tally.addEvents(rows);
    }
    // The database clock can step back: a mark moved back with it would count (mark', mark] again.
    tally[mark] = Math.max(tally[mark], hi);
    return end === undefined;
  }

  return {
    async metricsSnapshot(options): Promise<MetricsSnapshot> {
      const bounds = [...options.boundsMs];
      const [tally, claims, statuses, workers] = await Promise.all([
        count(bounds, (options.settleMs ?? SETTLE_MS) / 1000),
        raw<{ total: number; orphaned: number }>(CLAIMS_SQL, [c.skew(), options.claimTtlMs / 1000]),
        raw<{ status: keyof typeof EMPTY_BY_STATUS; n: number }>(STATUSES, []),
        raw<{ id: string; heartbeatAgeSeconds: number }>(WORKERS_SQL, [c.skew()]),
      ]);
      const runsByStatus = { ...EMPTY_BY_STATUS };
      for (const { status, n } of statuses.rows) runsByStatus[status] += n;
      const { total, orphaned } = claims.rows[0]!;
      return {
        ...tally.snapshot(),
        claims: { live: total - orphaned, orphaned },
        runsByStatus,
        workers: workers.rows,
      };
    },

    /**
     * One chunk past the stored marks, in one transaction holding the tally's row FOR UPDATE: a second advancer
     * (another worker, or a prune's fold) waits, and then reads past the marks this one saved. A lost
     * connection retries the whole transaction, which the rollback left undone.
     */
    async advanceMetricsTally(options) {
      const key = MetricsTally.key(options.boundsMs);
      const settle = (options.settleMs ?? SETTLE_MS) / 1000;
      const done = await withRetry('metrics', () =>
        c.inTransaction(async (client) => {
          const empty = new MetricsTally(options.boundsMs).row();
          await client.query(ENSURE_TALLY, [key, empty.stepsJson, empty.durationsJson]);
          const tally = MetricsTally.load(options.boundsMs, (await client.query<TallyRow>(LOCK_TALLY, [key])).rows[0]);
          const done = await chunk(client, tally, await cutoffOf(client, settle));
          const row = tally.row();
          await client.query(SAVE_TALLY, [key, row.committedMark, row.eventsMark, row.stepsJson, row.durationsJson]);
          return done;
        }),
      );
      return { done };
    },
  };
}
