/**
 * The metrics scrape on PostgreSQL, mirroring sqlite/metrics.ts: counts and histograms computed by the
 * database at scrape time, buckets counted with SUM(CASE …) so no rows are loaded. Counts come back as
 * int or float8 (count(*) and sum() of int are bigint/numeric, which pg would hand over as strings).
 * The statements run side by side on the pool, each with its own snapshot: a scrape is a sample. What only
 * grows (steps, step durations) is kept as running totals in the store (shared/metrics-tally.ts), advanced past rows
 * settled for SETTLE_MS, so it lags that much and reads only what is new.
 *
 * These statements stay positional text: the histogram's bounds are $1…$N by construction (shared/sql.ts
 * writes the SELECT list once for both dialects), and every statement's values are listed beside it.
 */
import type pg from 'pg';
import type { InsightStore, MetricOutcome, MetricsSnapshot } from '../contract';
import { claimExpiresAtText } from '../shared/claim-expiry-sql';
import type { HistogramRow } from '../shared/histogram';
import { MetricsTally, type TallyRow } from '../shared/metrics-tally';
import { COUNTED_EVENTS, EMPTY_BY_STATUS, histogramColumns, STATUS_SQL } from '../shared/sql';
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

/** $1 bounds, $2 steps, $3 durations: a row to lock, so the first scrape of new bounds has one too. */
const ENSURE_TALLY = `INSERT INTO metrics_tally (bounds, steps_json, durations_json) VALUES ($1, $2, $3) ON CONFLICT (bounds) DO NOTHING`;
const LOCK_TALLY = `SELECT ${TALLY} FROM metrics_tally WHERE bounds = $1 FOR UPDATE`;
const SAVE_TALLY = `UPDATE metrics_tally SET committed_mark = $2, events_mark = $3, steps_json = $4, durations_json = $5
  WHERE bounds = $1`;

export function postgresMetrics(c: PgConnection): Pick<InsightStore, 'metricsSnapshot'> {
  const raw = <R extends pg.QueryResultRow>(text: string, values: unknown[]) =>
    withRetry('metrics', () => c.pool.query<R>(text, values));

  /**
   * Reads what was written since the last scrape: committed rows by committed_at, events by at (both
   * indexed), in (mark, cutoff], the cutoff `settle` seconds ago by the database clock. Times are taken when
   * a statement starts, not when it commits, so the newest rows may become visible out of order; none is
   * older than the settle time. Ids are no better: an event's id is taken at insert, after its time, so a
   * lower id can carry a later time, and a mark on ids would skip it for good.
   *
   * The tally is the store's, shared by every dashboard process: its row is locked FOR UPDATE, read past, and
   * saved in one transaction, so a second scrape (of this process or another) waits and then reads past the
   * marks this one saved. A lost connection retries the whole transaction, which the rollback left undone.
   */
  function advance(boundsMs: number[], settle: number): Promise<MetricsTally> {
    return withRetry('metrics', () =>
      c.inTransaction(async (client) => {
        const key = MetricsTally.key(boundsMs);
        const empty = new MetricsTally(boundsMs).row();
        await client.query(ENSURE_TALLY, [key, empty.stepsJson, empty.durationsJson]);
        const tally = MetricsTally.load(boundsMs, (await client.query<TallyRow>(LOCK_TALLY, [key])).rows[0]);
        await advanceTally(client, tally, settle);
        const row = tally.row();
        await client.query(SAVE_TALLY, [key, row.committedMark, row.eventsMark, row.stepsJson, row.durationsJson]);
        return tally;
      }),
    );
  }

  async function advanceTally(client: pg.PoolClient, tally: MetricsTally, settle: number): Promise<void> {
    const bounds = [...tally.boundsMs];
    const n = bounds.length;
    const cols = histogramColumns('postgres', 'duration_ms', n);
    const cutoff = (await client.query<{ t: number }>(`SELECT ${NOW} - $2::float8 AS t`, [c.skew(), settle])).rows[0]!
      .t;
    const since = (mark: number) => (Number.isFinite(mark) ? mark : null);
    const committed = await client.query<HistogramRow & { executed: number }>(
      `SELECT count(*)::float8 AS executed, ${cols}
      FROM committed WHERE source = 'executed' AND ($${n + 1}::float8 IS NULL OR committed_at > $${n + 1}) AND committed_at <= $${n + 2}`,
      [...bounds, since(tally.committedMark), cutoff],
    );
    const events = await client.query<HistogramRow & { outcome: MetricOutcome; count: number }>(
      `SELECT outcome, coalesce(sum(count), 0)::float8 AS count, ${cols} FROM step_events
      WHERE ($${n + 1}::float8 IS NULL OR at > $${n + 1}) AND at <= $${n + 2} AND (${COUNTED_EVENTS}) GROUP BY outcome`,
      [...bounds, since(tally.eventsMark), cutoff],
    );
    // An executed step is its committed row: no `executed` event is written (docs/DESIGN-DECISIONS.md).
    tally.steps.executed += committed.rows[0]?.executed ?? 0;
    tally.addDurations('executed', committed.rows[0]);
    for (const row of events.rows) {
      tally.steps[row.outcome] += row.count;
      if (row.outcome === 'failed' || row.outcome === 'lease_lost') tally.addDurations(row.outcome, row);
    }
    // The database clock can step back: a mark moved back with it would count (mark', mark] again.
    tally.committedMark = Math.max(tally.committedMark, cutoff);
    tally.eventsMark = Math.max(tally.eventsMark, cutoff);
  }

  return {
    async metricsSnapshot(options): Promise<MetricsSnapshot> {
      const bounds = [...options.boundsMs];
      const [tally, claims, statuses, workers] = await Promise.all([
        advance(bounds, (options.settleMs ?? SETTLE_MS) / 1000),
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
  };
}
