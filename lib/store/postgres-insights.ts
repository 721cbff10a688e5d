/**
 * The control plane's reads on PostgreSQL, mirroring sqlite-insights.ts: aggregates and series computed by
 * the database. Counts come back as int (count(*) is bigint, which pg would hand over as a string).
 */
import { EMPTY_BY_STATUS, PostgresMetrics, STATUS_SQL } from './postgres-metrics';
import { stepless, UNSTABLE_CANDIDATES, type UnstableCandidate } from './insights-unstable';
import * as series from './postgres-series-sql';
import type {
  CommitBucket, CommittedRow, InsightStore, Outcome, RunStats, StepBucket, StepEvent, StepTiming, UnstableKeyGroup,
} from './types';

const COMMITTED = `idem_key AS "idemKey", run_id AS "runId", result_json AS "resultJson",
  committed_at AS "committedAt", step, fingerprint, worker_id AS "workerId", duration_ms AS "durationMs", source`;
const NOW = `(extract(epoch from now())::float8 + $1::float8)`;

/** $1 skew, $2 since (epoch s), $3 claim TTL s. */
const TOTALS_SQL = `SELECT
  (SELECT coalesce(sum(executed), 0)::int FROM progress) AS executed,
  (SELECT coalesce(sum(skipped), 0)::int FROM progress) AS skipped,
  (SELECT coalesce(sum(awaited), 0)::int FROM progress) AS awaited,
  (SELECT count(*)::int FROM committed WHERE committed_at >= $2) AS "committedSince",
  (SELECT count(*)::int FROM claims WHERE coalesce(lease_expires_at, claimed_at + $3::float8) <= ${NOW}) AS "orphanedClaims"`;

export abstract class PostgresInsights extends PostgresMetrics implements InsightStore {
  async runStats(options: { sinceSeconds: number; claimTtlMs: number }): Promise<RunStats> {
    const [statuses, totals] = await Promise.all([
      this.query<{ status: keyof typeof EMPTY_BY_STATUS; n: number }>(undefined, STATUS_SQL, []),
      this.query<Omit<RunStats, 'byStatus'>>(undefined, TOTALS_SQL, [this.skew(), options.sinceSeconds, options.claimTtlMs / 1000]),
    ]);
    const byStatus = { ...EMPTY_BY_STATUS };
    for (const { status, n } of statuses.rows) byStatus[status] += n;
    return { byStatus, ...totals.rows[0]! };
  }

  async listStepTimings(runId: string, options: { limit?: number } = {}): Promise<StepTiming[]> {
    return (await this.query<StepTiming>(undefined, `SELECT step, idem_key AS "idemKey", committed_at AS "committedAt",
        duration_ms AS "durationMs", source FROM committed WHERE run_id = $1
      ORDER BY coalesce(step, -1), idem_key COLLATE "C" LIMIT $2`, [runId, options.limit ?? 10_000])).rows;
  }

  async stepTimingBuckets(runId: string, options: { buckets: number }): Promise<StepBucket[]> {
    return (await this.query<StepBucket>(undefined, series.STEP_BUCKETS_SQL, [runId, options.buckets])).rows;
  }

  async commitBuckets(runId: string, options: { buckets: number }): Promise<CommitBucket[]> {
    return (await this.query<CommitBucket>(undefined, series.COMMIT_BUCKETS_SQL, [runId, options.buckets])).rows;
  }

  async recentSteps(runId: string, options: { limit: number }): Promise<StepTiming[]> {
    return (await this.query<StepTiming>(undefined, series.RECENT_STEPS_SQL, [runId, options.limit])).rows;
  }

  async recentEvents(runId: string, options: { limit: number; outcome?: Outcome }): Promise<StepEvent[]> {
    const { rows } = options.outcome
      ? await this.query<StepEvent>(undefined, series.RECENT_EVENTS_OF_OUTCOME_SQL, [runId, options.outcome, options.limit])
      : await this.query<StepEvent>(undefined, series.RECENT_EVENTS_SQL, [runId, options.limit]);
    return rows;
  }

  async countClaims(options: { claimTtlMs: number; runId?: string }): Promise<{ total: number; orphaned: number }> {
    return (await this.query<{ total: number; orphaned: number }>(undefined,
      options.runId === undefined ? series.COUNT_CLAIMS_SQL : `${series.COUNT_CLAIMS_SQL} WHERE run_id = $3`,
      options.runId === undefined ? [this.skew(), options.claimTtlMs / 1000] : [this.skew(), options.claimTtlMs / 1000, options.runId])).rows[0]!;
  }

  async searchCommitted(runId: string, query: string, options: { limit?: number } = {}): Promise<CommittedRow[]> {
    const pattern = `%${query.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
    return (await this.query<CommittedRow>(undefined, `SELECT ${COMMITTED} FROM committed
      WHERE run_id = $1 AND idem_key LIKE $2 ESCAPE '\\'
      ORDER BY coalesce(step, -1), idem_key COLLATE "C" LIMIT $3`, [runId, pattern, options.limit ?? 100])).rows;
  }

  async unstableKeys(runId: string, options: { limit?: number } = {}): Promise<UnstableKeyGroup[]> {
    const limit = options.limit ?? 50;
    const [steps, candidates] = await Promise.all([
      this.query<{ step: number; keys: string[] }>(undefined, `SELECT step,
          array_agg(idem_key ORDER BY idem_key COLLATE "C") AS keys
        FROM committed WHERE run_id = $1 AND step IS NOT NULL GROUP BY step HAVING count(*) > 1 ORDER BY step LIMIT $2`,
      [runId, limit]),
      // Stepless rows (committed_run_step's NULL range) that can be in a group: see insights-unstable.ts.
      this.query<UnstableCandidate>(undefined, `SELECT idem_key AS "idemKey", fingerprint, committed_at AS "committedAt"
        FROM committed WHERE run_id = $1 AND step IS NULL AND (
          fingerprint IN (SELECT fingerprint FROM committed WHERE run_id = $1 AND step IS NULL AND fingerprint IS NOT NULL
            GROUP BY fingerprint HAVING count(*) > 1)
          OR idem_key ~ '[0-9]{10}|[0-9]{2}:[0-9]{2}:[0-9]{2}' OR idem_key ~* 'try|attempt')
        ORDER BY idem_key COLLATE "C" LIMIT $2`, [runId, UNSTABLE_CANDIDATES]),
    ]);
    return [...steps.rows.map((r): UnstableKeyGroup => ({ step: r.step, keys: r.keys, why: 'step' })), ...stepless(candidates.rows)]
      .slice(0, limit);
  }

  async lastCommittedAt(runId: string): Promise<number | null> {
    return (await this.query<{ at: number | null }>(undefined, 'SELECT max(committed_at) AS at FROM committed WHERE run_id = $1', [runId]))
      .rows[0]!.at;
  }

  async recordEvent(e: { runId: string; outcome: Outcome; idemKey?: string | null; step?: number | null; workerId?: string | null; detail?: string | null }): Promise<void> {
    await this.query(undefined, `INSERT INTO step_events (run_id, idem_key, step, outcome, count, worker_id, detail, at)
      VALUES ($2, $3, $4, $5, 1, $6, $7, ${NOW})`,
    [this.skew(), e.runId, e.idemKey ?? null, e.step ?? null, e.outcome, e.workerId ?? null, e.detail ?? null]);
  }
}
