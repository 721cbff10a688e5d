/**
 * The metrics scrape on PostgreSQL, mirroring sqlite-metrics.ts: counts and histograms computed by the
 * database at scrape time, buckets counted with SUM(CASE …) so no rows are loaded. Counts come back as
 * int or float8 (count(*) and sum() of int are bigint/numeric, which pg would hand over as strings).
 * The statements run side by side on the pool, each with its own snapshot: a scrape is a sample, and a
 * step committed between two of them only shows up one scrape later.
 */
import { PostgresAudit } from './postgres-audit';
import { toHistogram, type HistogramRow } from './histogram';
import { METRIC_OUTCOMES, type InsightStore, type MetricOutcome, type MetricsSnapshot } from './types';

/** Runs by status, outside clients' runs (no runs row) as `running` while they hold a claim, else `idle`. */
export const STATUS_SQL = `SELECT status, count(*)::int AS n FROM runs GROUP BY status
  UNION ALL
  SELECT CASE WHEN EXISTS (SELECT 1 FROM claims c WHERE c.run_id = x.run_id) THEN 'running' ELSE 'idle' END, 1
  FROM (SELECT run_id FROM progress UNION SELECT run_id FROM claims) x
  WHERE NOT EXISTS (SELECT 1 FROM runs r WHERE r.id = x.run_id)`;

export const EMPTY_BY_STATUS = { queued: 0, running: 0, paused: 0, completed: 0, failed: 0, cancelled: 0, idle: 0 };

const NOW = `(extract(epoch from now())::float8 + $1::float8)`;

/** As in sqlite-metrics.ts: folded skips and awaits, and keyed events only (a run takeover is not a step). */
const EVENTS_SQL = `SELECT outcome, coalesce(sum(count), 0)::float8 AS n FROM step_events
  WHERE outcome IN ('skipped', 'awaited')
     OR (idem_key IS NOT NULL AND outcome IN ('failed', 'lease_lost', 'expired', 'resolved', 'key_reuse'))
  GROUP BY outcome`;

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

export abstract class PostgresMetrics extends PostgresAudit implements Pick<InsightStore, 'metricsSnapshot'> {
  async metricsSnapshot(options: { claimTtlMs: number; boundsMs: readonly number[] }): Promise<MetricsSnapshot> {
    const bounds = [...options.boundsMs];
    const cols = (column: string) => histogramColumns(column, bounds.length);
    const [events, executedCount, claims, statuses, executed, attempts, commits, workers] = await Promise.all([
      this.query<{ outcome: MetricOutcome; n: number }>(undefined, EVENTS_SQL, []),
      // An executed step is its committed row: no `executed` event is written (README, Design).
      this.query<{ n: number }>(undefined, "SELECT count(*)::float8 AS n FROM committed WHERE source = 'executed'", []),
      this.query<{ total: number; orphaned: number }>(undefined, CLAIMS_SQL, [this.skew(), options.claimTtlMs / 1000]),
      this.query<{ status: keyof typeof EMPTY_BY_STATUS; n: number }>(undefined, STATUS_SQL, []),
      this.query<HistogramRow>(undefined,
        `SELECT ${cols('duration_ms')} FROM committed WHERE source = 'executed' AND duration_ms IS NOT NULL`, bounds),
      this.query<HistogramRow & { outcome: string }>(undefined, `SELECT outcome, ${cols('duration_ms')} FROM step_events
        WHERE outcome IN ('failed', 'lease_lost') AND duration_ms IS NOT NULL GROUP BY outcome`, bounds),
      this.query<HistogramRow>(undefined, `SELECT ${cols('save_ms')} FROM progress WHERE save_ms IS NOT NULL`, bounds),
      this.query<{ id: string; heartbeatAgeSeconds: number }>(undefined, WORKERS_SQL, [this.skew()]),
    ]);
    const steps = Object.fromEntries(METRIC_OUTCOMES.map((o) => [o, 0])) as Record<MetricOutcome, number>;
    for (const { outcome, n } of events.rows) steps[outcome] = n;
    steps.executed = executedCount.rows[0]!.n;
    const runsByStatus = { ...EMPTY_BY_STATUS };
    for (const { status, n } of statuses.rows) runsByStatus[status] += n;
    const { total, orphaned } = claims.rows[0]!;
    return {
      steps,
      claims: { live: total - orphaned, orphaned },
      runsByStatus,
      stepDurations: {
        executed: toHistogram(executed.rows[0], bounds),
        failed: toHistogram(attempts.rows.find((a) => a.outcome === 'failed'), bounds),
        lease_lost: toHistogram(attempts.rows.find((a) => a.outcome === 'lease_lost'), bounds),
      },
      commitDurations: toHistogram(commits.rows[0], bounds),
      workers: workers.rows,
    };
  }
}
