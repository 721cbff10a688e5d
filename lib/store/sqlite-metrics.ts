/**
 * The metrics scrape on SQLite: counts and histograms computed by the database at scrape time, so every
 * worker's steps are counted whichever process serves /api/metrics. Histogram buckets are counted with
 * one SUM(CASE …) per bound: a scrape never loads rows, however many a store holds.
 */
import { toHistogram, type HistogramRow } from './histogram';
import { SqliteAudit } from './sqlite-audit';
import { guard } from './sqlite-base';
import { METRIC_OUTCOMES, type InsightStore, type MetricOutcome, type MetricsSnapshot } from './types';

/** Runs by status, outside clients' runs (no runs row) as `running` while they hold a claim, else `idle`. */
export const STATUS_SQL = `
  SELECT status, count(*) AS n FROM runs GROUP BY status
  UNION ALL
  SELECT CASE WHEN EXISTS (SELECT 1 FROM claims c WHERE c.run_id = x.run_id) THEN 'running' ELSE 'idle' END, 1
  FROM (SELECT run_id FROM progress UNION SELECT run_id FROM claims) x
  WHERE NOT EXISTS (SELECT 1 FROM runs r WHERE r.id = x.run_id)`;

export const EMPTY_BY_STATUS = { queued: 0, running: 0, paused: 0, completed: 0, failed: 0, cancelled: 0, idle: 0 };

/**
 * Step outcomes from step_events. Skips and awaits are folded events (one per progress write, `count` says
 * how many); the rest are one event per key. A run-level takeover is also recorded as `expired`, with no
 * key: it is not a step, so only keyed events count for the per-key outcomes.
 */
const EVENTS_SQL = `SELECT outcome, coalesce(sum(count), 0) AS n FROM step_events
  WHERE outcome IN ('skipped', 'awaited')
     OR (idem_key IS NOT NULL AND outcome IN ('failed', 'lease_lost', 'expired', 'resolved', 'key_reuse'))
  GROUP BY outcome`;

/** SELECT list of a histogram over `column`: count, sum, then b0…bN as cumulative bucket counts. */
function histogramColumns(column: string, bounds: number): string {
  const buckets = Array.from({ length: bounds }, (_, i) => `coalesce(sum(CASE WHEN ${column} <= @b${i} THEN 1 ELSE 0 END), 0) AS b${i}`);
  return [`count(${column}) AS n`, `coalesce(sum(${column}), 0) AS total`, ...buckets].join(', ');
}

export abstract class SqliteMetrics extends SqliteAudit implements Pick<InsightStore, 'metricsSnapshot'> {
  async metricsSnapshot(options: { claimTtlMs: number; boundsMs: readonly number[] }): Promise<MetricsSnapshot> {
    const now = this.now();
    const bounds = Object.fromEntries(options.boundsMs.map((b, i) => [`b${i}`, b]));
    const cols = (column: string) => histogramColumns(column, options.boundsMs.length);
    // One read transaction: every number of a scrape comes from the same snapshot of the file.
    return guard(() => this.db.transaction((): MetricsSnapshot => {
      const steps = Object.fromEntries(METRIC_OUTCOMES.map((o) => [o, 0])) as Record<MetricOutcome, number>;
      for (const { outcome, n } of this.db.prepare<[], { outcome: MetricOutcome; n: number }>(EVENTS_SQL).all()) steps[outcome] = n;
      // An executed step is its committed row: no `executed` event is written (README, Design).
      steps.executed = this.db.prepare<[], { n: number }>("SELECT count(*) AS n FROM committed WHERE source = 'executed'").get()!.n;

      const claims = this.db.prepare<[{ now: number; ttl: number }], { total: number; orphaned: number }>(`
        SELECT count(*) AS total, coalesce(sum(CASE WHEN coalesce(lease_expires_at, claimed_at + @ttl) <= @now THEN 1 ELSE 0 END), 0) AS orphaned
        FROM claims`).get({ now, ttl: options.claimTtlMs / 1000 })!;

      const runsByStatus = { ...EMPTY_BY_STATUS };
      for (const { status, n } of this.db.prepare<[], { status: keyof typeof EMPTY_BY_STATUS; n: number }>(STATUS_SQL).all()) {
        runsByStatus[status] += n;
      }

      const executed = this.db.prepare<[Record<string, number>], HistogramRow>(
        `SELECT ${cols('duration_ms')} FROM committed WHERE source = 'executed' AND duration_ms IS NOT NULL`).get(bounds);
      const attempts = this.db.prepare<[Record<string, number>], HistogramRow & { outcome: string }>(
        `SELECT outcome, ${cols('duration_ms')} FROM step_events
         WHERE outcome IN ('failed', 'lease_lost') AND duration_ms IS NOT NULL GROUP BY outcome`).all(bounds);
      const commits = this.db.prepare<[Record<string, number>], HistogramRow>(
        `SELECT ${cols('save_ms')} FROM progress WHERE save_ms IS NOT NULL`).get(bounds);

      const workers = this.db.prepare<[number], { id: string; heartbeatAgeSeconds: number }>(`
        SELECT id, ? - heartbeat_at AS heartbeatAgeSeconds FROM workers WHERE stopped_at IS NULL ORDER BY id`).all(now);

      return {
        steps,
        claims: { live: claims.total - claims.orphaned, orphaned: claims.orphaned },
        runsByStatus,
        stepDurations: {
          executed: toHistogram(executed, options.boundsMs),
          failed: toHistogram(attempts.find((a) => a.outcome === 'failed'), options.boundsMs),
          lease_lost: toHistogram(attempts.find((a) => a.outcome === 'lease_lost'), options.boundsMs),
        },
        commitDurations: toHistogram(commits, options.boundsMs),
        workers,
      };
    })());
  }
}
