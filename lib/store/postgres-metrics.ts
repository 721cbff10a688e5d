/**
 * The metrics scrape on PostgreSQL, mirroring sqlite-metrics.ts: counts and histograms computed by the
 * database at scrape time, buckets counted with SUM(CASE …) so no rows are loaded. Counts come back as
 * int or float8 (count(*) and sum() of int are bigint/numeric, which pg would hand over as strings).
 * The statements run side by side on the pool, each with its own snapshot: a scrape is a sample. What only
 * grows (steps, step durations) is kept as running totals in the store (metrics-tally.ts), advanced past rows
 * settled for SETTLE_MS, so it lags that much and reads only what is new.
 */
import type pg from 'pg';
import { PostgresAudit } from './postgres-audit';
import { withRetry } from './postgres-retry';
import { toHistogram, type HistogramRow } from './histogram';
import { MetricsTally, TALLY_COLUMNS, type TallyRow } from './metrics-tally';
import type { InsightStore, MetricOutcome, MetricsSnapshot } from './types';

/** Runs by status, outside clients' runs (no runs row) as `running` while they hold a claim, else `idle`. */
export const STATUS_SQL = `SELECT status, count(*)::int AS n FROM runs GROUP BY status
  UNION ALL
  SELECT CASE WHEN EXISTS (SELECT 1 FROM claims c WHERE c.run_id = x.run_id) THEN 'running' ELSE 'idle' END, 1
  FROM (SELECT run_id FROM progress UNION SELECT run_id FROM claims) x
  WHERE NOT EXISTS (SELECT 1 FROM runs r WHERE r.id = x.run_id)`;

export const EMPTY_BY_STATUS = { queued: 0, running: 0, paused: 0, completed: 0, failed: 0, cancelled: 0, idle: 0 };

const NOW = `(extract(epoch from now())::float8 + $1::float8)`;

/** As in sqlite-metrics.ts: folded skips and awaits, and keyed events only (a run takeover is not a step). */
const COUNTED_EVENTS = `outcome IN ('skipped', 'awaited')
  OR (idem_key IS NOT NULL AND outcome IN ('failed', 'lease_lost', 'expired', 'resolved', 'key_reuse'))`;

/** $1 skew, $2 claim TTL s. */
const CLAIMS_SQL = `SELECT count(*)::int AS total,
  coalesce(sum(CASE WHEN coalesce(lease_expires_at, claimed_at + $2::float8) <= ${NOW} THEN 1 ELSE 0 END), 0)::int AS orphaned
  FROM claims`;

/** $1 skew. */
const WORKERS_SQL = `SELECT id, ${NOW} - heartbeat_at AS "heartbeatAgeSeconds" FROM workers
  WHERE stopped_at IS NULL ORDER BY id COLLATE "C"`;

/** SELECT list of a histogram over `column`, the bounds being $1…$N: count, sum, then b0…bN-1. */
function histogramColumns(column: string, bounds: number): string {
  const buckets = Array.from({ length: bounds },
    (_, i) => `coalesce(sum(CASE WHEN ${column} <= $${i + 1}::float8 THEN 1 ELSE 0 END), 0)::float8 AS b${i}`);
  return [`count(${column})::float8 AS n`, `coalesce(sum(${column}), 0)::float8 AS total`, ...buckets].join(', ');
}

/** How old a row must be before it is counted: older than any commit still in flight (each is one statement). */
const SETTLE_MS = 10_000;

/** $1 bounds, $2 steps, $3 durations: a row to lock, so the first scrape of new bounds has one too. */
const ENSURE_TALLY = `INSERT INTO metrics_tally (bounds, steps_json, durations_json) VALUES ($1, $2, $3) ON CONFLICT (bounds) DO NOTHING`;
const LOCK_TALLY = `SELECT ${TALLY_COLUMNS} FROM metrics_tally WHERE bounds = $1 FOR UPDATE`;
const SAVE_TALLY = `UPDATE metrics_tally SET committed_mark = $2, events_mark = $3, steps_json = $4, durations_json = $5
  WHERE bounds = $1`;

export abstract class PostgresMetrics extends PostgresAudit implements Pick<InsightStore, 'metricsSnapshot'> {
  async metricsSnapshot(options: { claimTtlMs: number; boundsMs: readonly number[]; settleMs?: number }): Promise<MetricsSnapshot> {
    const bounds = [...options.boundsMs];
    const cols = (column: string) => histogramColumns(column, bounds.length);
    const [tally, claims, statuses, commits, workers] = await Promise.all([
      this.advance(bounds, (options.settleMs ?? SETTLE_MS) / 1000),
      this.query<{ total: number; orphaned: number }>(undefined, CLAIMS_SQL, [this.skew(), options.claimTtlMs / 1000]),
      this.query<{ status: keyof typeof EMPTY_BY_STATUS; n: number }>(undefined, STATUS_SQL, []),
      this.query<HistogramRow>(undefined, `SELECT ${cols('save_ms')} FROM progress WHERE save_ms IS NOT NULL`, bounds),
      this.query<{ id: string; heartbeatAgeSeconds: number }>(undefined, WORKERS_SQL, [this.skew()]),
    ]);
    const runsByStatus = { ...EMPTY_BY_STATUS };
    for (const { status, n } of statuses.rows) runsByStatus[status] += n;
    const { total, orphaned } = claims.rows[0]!;
    return {
      ...tally.snapshot(),
      claims: { live: total - orphaned, orphaned },
      runsByStatus,
      commitDurations: toHistogram(commits.rows[0], bounds),
      workers: workers.rows,
    };
  }

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
  private advance(boundsMs: number[], settle: number): Promise<MetricsTally> {
    return withRetry('metrics', () => this.inTransaction(async (client) => {
      const key = MetricsTally.key(boundsMs);
      const empty = new MetricsTally(boundsMs).row();
      await client.query(ENSURE_TALLY, [key, empty.stepsJson, empty.durationsJson]);
      const tally = MetricsTally.load(boundsMs, (await client.query<TallyRow>(LOCK_TALLY, [key])).rows[0]);
      await this.advanceTally(client, tally, settle);
      const row = tally.row();
      await client.query(SAVE_TALLY, [key, row.committedMark, row.eventsMark, row.stepsJson, row.durationsJson]);
      return tally;
    }));
  }

  private async advanceTally(client: pg.PoolClient, tally: MetricsTally, settle: number): Promise<void> {
    const bounds = [...tally.boundsMs];
    const n = bounds.length;
    const cols = histogramColumns('duration_ms', n);
    const cutoff = (await client.query<{ t: number }>(`SELECT ${NOW} - $2::float8 AS t`, [this.skew(), settle])).rows[0]!.t;
    const since = (mark: number) => (Number.isFinite(mark) ? mark : null);
    const committed = await client.query<HistogramRow & { executed: number }>(`SELECT count(*)::float8 AS executed, ${cols}
      FROM committed WHERE source = 'executed' AND ($${n + 1}::float8 IS NULL OR committed_at > $${n + 1}) AND committed_at <= $${n + 2}`,
    [...bounds, since(tally.committedMark), cutoff]);
    const events = await client.query<HistogramRow & { outcome: MetricOutcome; count: number }>(
      `SELECT outcome, coalesce(sum(count), 0)::float8 AS count, ${cols} FROM step_events
      WHERE ($${n + 1}::float8 IS NULL OR at > $${n + 1}) AND at <= $${n + 2} AND (${COUNTED_EVENTS}) GROUP BY outcome`,
    [...bounds, since(tally.eventsMark), cutoff]);
    // An executed step is its committed row: no `executed` event is written (README, Design).
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
}
