/**
 * The control plane's reads on PostgreSQL, mirroring sqlite/reads.ts: aggregates and series computed by the
 * database, grouped there so a 100,000-step run sends a few hundred rows. Counts and sums are cast to int or
 * float8 (count(*) is bigint and sum() numeric, which pg would hand over as strings).
 */
import { max, sql } from 'drizzle-orm';
import type {
  CommitBucket,
  CommittedRow,
  InsightStore,
  RunStats,
  StepBucket,
  StepEvent,
  StepTiming,
  UnstableKeyGroup,
} from '../contract';
import { committed } from '../schema/pg';
import { claimExpiredSql, claimTimes } from '../shared/claim-expiry-sql';
import { containsPattern } from '../shared/columns';
import { stepless, UNSTABLE_CANDIDATES, type UnstableCandidate } from '../shared/insights-unstable';
import { EMPTY_BY_STATUS, STATUS_SQL } from '../shared/sql';
import { committedSelect, EVENT as EVENT_LIST, TIMING as TIMING_LIST, UNSTABLE } from './columns';
import type { PgConnection } from './connection';
import { withRetry } from './retry';
import { SERIAL_PLAN } from './serial-plan';

/** Runs by status and the progress counters: what only the rows decide, not the clock. */
type RowCounts = Pick<RunStats, 'byStatus' | 'executed' | 'skipped' | 'awaited'>;

/**
 * Which transactions the statement sees: the same text means the same committed rows. Any write gets a
 * transaction id, which moves xmax, and stays in the in-progress list until it ends; a read-only one gets none.
 */
const SNAPSHOT = 'pg_current_snapshot()::text';
const TIMING = sql.raw(TIMING_LIST);
const EVENT = sql.raw(EVENT_LIST);

export function postgresReads(c: PgConnection): Omit<InsightStore, 'metricsSnapshot'> {
  const orphaned = (ttlMs: number) => claimExpiredSql(claimTimes(), sql`${ttlMs / 1000}::float8`, c.now());

  // runStats' row counts pass over every runs and progress row (bench/RESULTS.md has what that costs at 100,000
  // runs), so, as sqlite/reads.ts does with the file's change marker, they are counted again only once the
  // database's snapshot moved. The snapshot is read in the counting statement itself, so the counts kept are
  // exactly those of the snapshot they are kept under.
  let counted: { snapshot: string; counts: RowCounts } | null = null;
  const rowCounts = async (): Promise<RowCounts> => {
    if (counted) {
      const kept = counted;
      const { rows } = await c.query<{ snapshot: string }>(sql`SELECT ${sql.raw(SNAPSHOT)} AS snapshot`);
      if (rows[0]!.snapshot === kept.snapshot) return kept.counts;
    }
    const { rows } = await c.query<
      Omit<RowCounts, 'byStatus'> & {
        snapshot: string;
        statuses: { status: keyof typeof EMPTY_BY_STATUS; n: number }[];
      }
    >(sql`SELECT ${sql.raw(SNAPSHOT)} AS snapshot,
        (SELECT coalesce(json_agg(s), '[]') FROM (${sql.raw(STATUS_SQL('postgres'))}) s) AS statuses,
        coalesce(sum(executed), 0)::int AS executed, coalesce(sum(skipped), 0)::int AS skipped,
        coalesce(sum(awaited), 0)::int AS awaited
      FROM progress WHERE ${SERIAL_PLAN} IS NOT NULL`);
    const { snapshot, statuses, ...totals } = rows[0]!;
    const byStatus = { ...EMPTY_BY_STATUS };
    for (const { status, n } of statuses) byStatus[status] += n;
    counted = { snapshot, counts: { byStatus, ...totals } };
    return counted.counts;
  };

  return {
    async runStats(options): Promise<RunStats> {
      const [counts, clockBound] = await Promise.all([
        rowCounts(),
        c.query<Pick<RunStats, 'committedSince' | 'orphanedClaims'>>(sql`SELECT
          (SELECT count(*)::int FROM committed WHERE committed_at >= ${options.sinceSeconds}::float8) AS "committedSince",
          (SELECT count(*)::int FROM claims WHERE ${orphaned(options.claimTtlMs)}) AS "orphanedClaims"
          WHERE ${SERIAL_PLAN} IS NOT NULL`),
      ]);
      // A copy: the kept counts are not the caller's to change.
      return { ...counts, byStatus: { ...counts.byStatus }, ...clockBound.rows[0]! };
    },

    async listStepTimings(runId, options = {}): Promise<StepTiming[]> {
      return (
        await c.query<StepTiming>(sql`SELECT ${TIMING} FROM ${committed} WHERE run_id = ${runId}
        ORDER BY coalesce(step, -1), idem_key COLLATE "C" LIMIT ${options.limit ?? 10_000}::int`)
      ).rows;
    },

    /** The width comes from the run's last step, so the GROUP BY yields at most `buckets` rows. */
    async stepTimingBuckets(runId, options): Promise<StepBucket[]> {
      const buckets = sql`${options.buckets}::int`;
      return (
        await c.query<StepBucket>(sql`WITH w AS (
          SELECT greatest(1, (coalesce(max(step), 0) + ${buckets}) / ${buckets}) AS w FROM committed WHERE run_id = ${runId})
        SELECT min(step) AS "fromStep", max(step) AS "toStep", count(*)::int AS count,
          avg(duration_ms)::float8 AS "avgMs", max(duration_ms) AS "maxMs"
        FROM committed, w WHERE run_id = ${runId} AND step IS NOT NULL GROUP BY step / w.w ORDER BY "fromStep"`)
      ).rows;
    },

    /** Executed commits and folded skip/await events in equal slices of the run's time. */
    async commitBuckets(runId, options): Promise<CommitBucket[]> {
      const buckets = sql`${options.buckets}::int`;
      return (
        await c.query<CommitBucket>(sql`WITH pts AS (
          SELECT committed_at AS t, 1 AS e, 0 AS s, 0 AS a FROM committed WHERE run_id = ${runId} AND source = 'executed'
          UNION ALL
          SELECT at, 0, CASE outcome WHEN 'skipped' THEN count ELSE 0 END, CASE outcome WHEN 'awaited' THEN count ELSE 0 END
          FROM step_events WHERE run_id = ${runId} AND outcome IN ('skipped', 'awaited')),
        span AS (SELECT min(t) AS t0, greatest(max(t) - min(t), 1e-6) / ${buckets} AS w FROM pts),
        grouped AS (SELECT least(floor((t - span.t0) / span.w)::int, ${buckets} - 1) AS b,
            sum(e)::int AS executed, sum(s)::int AS skipped, sum(a)::int AS awaited
          FROM pts, span GROUP BY 1)
        SELECT span.t0 + (b + 1) * span.w AS t, executed, skipped, awaited FROM grouped, span ORDER BY b`)
      ).rows;
    },

    /** The last steps in the committed table's order, read backwards from its index. */
    async recentSteps(runId, options): Promise<StepTiming[]> {
      return (
        await c.read<StepTiming>(
          'recentSteps',
          sql`SELECT step, "idemKey", "committedAt", "durationMs", source FROM (
          SELECT ${TIMING}, coalesce(step, -1) AS o, idem_key COLLATE "C" AS k
          FROM committed WHERE run_id = ${runId} ORDER BY coalesce(step, -1) DESC, idem_key COLLATE "C" DESC LIMIT ${options.limit}::int) last
        ORDER BY o, k`,
        )
      ).rows;
    },

    /**
     * The run's last events, read backwards from (run_id, id), or from (run_id, outcome, id) for one outcome,
     * so a run without such events costs one index probe. The order is by step_events.id, not by the bare
     * name: that would be the float8 output column, which no index serves.
     */
    async recentEvents(runId, options): Promise<StepEvent[]> {
      const outcome = options.outcome ? sql`AND outcome = ${options.outcome}` : sql``;
      return (
        await c.read<StepEvent>(
          'recentEvents',
          sql`SELECT * FROM (SELECT ${EVENT}
        FROM step_events WHERE run_id = ${runId} ${outcome} ORDER BY step_events.id DESC LIMIT ${options.limit}::int) last
        ORDER BY id`,
        )
      ).rows;
    },

    async countClaims(options) {
      const run = options.runId === undefined ? sql`` : sql`WHERE run_id = ${options.runId}`;
      return (
        await c.read<{ total: number; orphaned: number }>(
          'countClaims',
          sql`SELECT count(*)::int AS total,
        count(*) FILTER (WHERE ${orphaned(options.claimTtlMs)})::int AS orphaned FROM claims ${run}`,
        )
      ).rows[0]!;
    },

    async searchCommitted(runId, query, options = {}): Promise<CommittedRow[]> {
      return (
        await c.query<CommittedRow>(sql`SELECT ${committedSelect} FROM ${committed}
        WHERE run_id = ${runId} AND idem_key LIKE ${containsPattern(query)} ESCAPE '\\'
        ORDER BY coalesce(step, -1), idem_key COLLATE "C" LIMIT ${options.limit ?? 100}::int`)
      ).rows;
    },

    async unstableKeys(runId, options = {}): Promise<UnstableKeyGroup[]> {
      const limit = options.limit ?? 50;
      const [steps, candidates] = await Promise.all([
        c.query<{
          step: number;
          keys: string[];
        }>(sql`SELECT step, array_agg(idem_key ORDER BY idem_key COLLATE "C") AS keys
          FROM committed WHERE run_id = ${runId} AND step IS NOT NULL GROUP BY step HAVING count(*) > 1 ORDER BY step
          LIMIT ${limit}::int`),
        // Stepless rows (committed_run_step's NULL range) that can be in a group: see shared/insights-unstable.ts.
        c.query<UnstableCandidate>(sql`SELECT ${sql.raw(UNSTABLE)}
          FROM committed WHERE run_id = ${runId} AND step IS NULL AND (
            fingerprint IN (SELECT fingerprint FROM committed WHERE run_id = ${runId} AND step IS NULL AND fingerprint IS NOT NULL
              GROUP BY fingerprint HAVING count(*) > 1)
            OR idem_key ~ '[0-9]{10}|[0-9]{2}:[0-9]{2}:[0-9]{2}' OR idem_key ~* 'try|attempt')
          ORDER BY idem_key COLLATE "C" LIMIT ${UNSTABLE_CANDIDATES}::int`),
      ]);
      return [
        ...steps.rows.map((r): UnstableKeyGroup => ({ step: r.step, keys: r.keys, why: 'step' })),
        ...stepless(candidates.rows),
      ].slice(0, limit);
    },

    async lastCommittedAt(runId) {
      const [row] = await withRetry('lastCommittedAt', () =>
        c.orm
          .select({ at: max(committed.committedAt) })
          .from(committed)
          .where(sql`${committed.runId} = ${runId}`),
      );
      return row?.at ?? null;
    },
  };
}
