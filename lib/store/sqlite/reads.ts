/**
 * The control plane's reads on SQLite: aggregates and series computed by the database, so a page never
 * pulls a run's whole history to count it. Hand-written: each is a GROUP BY or a window over an index, whose
 * shape (and the index it needs) the comments explain; a query builder would only hide that.
 */
import { claimExpiresAtText } from '../shared/claim-expiry-sql';
import { containsPattern } from '../shared/columns';
import { stepless, UNSTABLE_CANDIDATES, type UnstableCandidate } from '../shared/insights-unstable';
import { EMPTY_BY_STATUS, STATUS_SQL } from '../shared/sql';

const STATUSES = STATUS_SQL('sqlite');

import type {
  CommitBucket,
  CommittedRow,
  InsightStore,
  Outcome,
  RunStats,
  StepBucket,
  StepEvent,
  StepTiming,
  UnstableKeyGroup,
} from '../contract';
import { COMMITTED, EVENT, TIMING, UNSTABLE } from './columns';
import { committedRun, runRows, runRowsInOrder } from './committed-rows';
import { guard, type SqliteConnection } from './connection';

/** Runs by status and the progress counters: what only the rows decide, not the clock. */
type RowCounts = Pick<RunStats, 'byStatus' | 'executed' | 'skipped' | 'awaited'>;

/**
 * Changes when anything is committed to the file: data_version by any other connection (other processes, and
 * this process's other connections), total_changes() by this one. Read in about a microsecond, no lock.
 */
const CHANGE_MARKER = "SELECT data_version || ':' || total_changes() AS marker FROM pragma_data_version";

export function sqliteReads(c: SqliteConnection): Omit<InsightStore, 'metricsSnapshot'> {
  // runStats' row counts pass over every runs and progress row (25-35 ms at 100,000 runs), blocking the
  // process: they are read again only once the file changed, so a store at rest costs the two clock-bound
  // counts, each an index range or the claims in flight.
  let counted: { marker: string; counts: RowCounts } | null = null;
  const rowCounts = (): RowCounts => {
    const marker = c.prepared<[], { marker: string }>(CHANGE_MARKER).get()!.marker;
    if (counted?.marker === marker) return counted.counts;
    const byStatus = { ...EMPTY_BY_STATUS };
    const statuses = c.prepared<[], { status: keyof typeof EMPTY_BY_STATUS; n: number }>(STATUSES).all();
    for (const { status, n } of statuses) byStatus[status] += n;
    const totals = c
      .prepared<[], { executed: number; skipped: number; awaited: number }>(`
      SELECT coalesce(sum(executed), 0) AS executed, coalesce(sum(skipped), 0) AS skipped,
        coalesce(sum(awaited), 0) AS awaited FROM progress`)
      .get()!;
    counted = { marker, counts: { byStatus, ...totals } };
    return counted.counts;
  };

  return {
    async runStats(options: { sinceSeconds: number; claimTtlMs: number }): Promise<RunStats> {
      return guard(() => {
        const now = c.now();
        // One read transaction: the marker and the counts it stands for are one snapshot.
        return c.db.transaction(() => {
          const { byStatus, ...totals } = rowCounts();
          const committedSince = c
            .prepared<[number], { n: number }>('SELECT count(*) AS n FROM committed WHERE committed_at >= ?')
            .get(options.sinceSeconds)!.n;
          const orphanedClaims = c
            .prepared<[number, number], { n: number }>(
              `SELECT count(*) AS n FROM claims WHERE ${claimExpiresAtText('?')} <= ?`,
            )
            .get(options.claimTtlMs / 1000, now)!.n;
          // A copy: the cached counts are not the caller's to change.
          return { byStatus: { ...byStatus }, ...totals, committedSince, orphanedClaims };
        })();
      });
    },

    async listStepTimings(runId: string, options: { limit?: number } = {}): Promise<StepTiming[]> {
      return guard(() =>
        c
          .prepared<unknown[], StepTiming>(
            runRowsInOrder({ columns: TIMING, id: '@runId', order: 'step, idemKey', limit: '@limit' }),
          )
          .all({ runId, limit: options.limit ?? 10_000 }),
      );
    },

    async stepTimingBuckets(runId: string, options: { buckets: number }): Promise<StepBucket[]> {
      // The width comes from the run's last step (an index seek), so the GROUP BY yields at most `buckets` rows.
      // CAST: better-sqlite3 binds a number as REAL, and the division must be an integer one.
      return guard(() =>
        c
          .prepared<unknown[], StepBucket>(`WITH w AS (
          SELECT max(1, (coalesce(max(last), 0) + CAST(@buckets AS INTEGER)) / CAST(@buckets AS INTEGER)) AS w
          FROM (${runRows({ columns: 'max(step) AS last', id: '@runId' })}))
        SELECT min(step) AS fromStep, max(step) AS toStep, count(*) AS count, avg(duration_ms) AS avgMs, max(duration_ms) AS maxMs
        FROM (${runRows({ columns: 'step, duration_ms', id: '@runId', where: 'step IS NOT NULL' })}), w
        GROUP BY step / w.w ORDER BY fromStep`)
          .all({ runId, buckets: options.buckets }),
      );
    },

    async commitBuckets(runId: string, options: { buckets: number }): Promise<CommitBucket[]> {
      return guard(() =>
        c
          .prepared<unknown[], CommitBucket>(`WITH pts AS (
          SELECT committed_at AS t, 1 AS e, 0 AS s, 0 AS a FROM committed WHERE ${committedRun('= @runId')} AND source = 'executed'
          UNION ALL
          SELECT at, 0, CASE outcome WHEN 'skipped' THEN count ELSE 0 END, CASE outcome WHEN 'awaited' THEN count ELSE 0 END
          FROM step_events WHERE run_id = @runId AND outcome IN ('skipped', 'awaited')),
        span AS (SELECT min(t) AS t0, max(max(t) - min(t), 1e-6) / @buckets AS w FROM pts)
        SELECT span.t0 + (b + 1) * span.w AS t, executed, skipped, awaited FROM (
          SELECT min(CAST((t - span.t0) / span.w AS INTEGER), @buckets - 1) AS b, sum(e) AS executed, sum(s) AS skipped, sum(a) AS awaited
          FROM pts, span GROUP BY b), span ORDER BY b`)
          .all({ runId, buckets: options.buckets }),
      );
    },

    async recentSteps(runId: string, options: { limit: number }): Promise<StepTiming[]> {
      return guard(() =>
        c
          .prepared<unknown[], StepTiming>(
            `SELECT * FROM (${runRowsInOrder({
              columns: TIMING,
              id: '@runId',
              order: 'step DESC, idemKey DESC',
              limit: '@limit',
            })}) ORDER BY step, idemKey`,
          )
          .all({ runId, limit: options.limit }),
      );
    },

    async recentEvents(runId: string, options: { limit: number; outcome?: Outcome }): Promise<StepEvent[]> {
      // Two statements, not `(? IS NULL OR outcome = ?)`: each gets the index that answers it, (run_id, id) or
      // (run_id, outcome, id), so a run with no events of the outcome costs one probe, not a walk of all its events.
      return guard(() =>
        options.outcome
          ? c
              .prepared<[string, string, number], StepEvent>(`SELECT * FROM (SELECT ${EVENT} FROM step_events
            WHERE run_id = ? AND outcome = ? ORDER BY id DESC LIMIT ?) ORDER BY id`)
              .all(runId, options.outcome, options.limit)
          : c
              .prepared<[string, number], StepEvent>(`SELECT * FROM (SELECT ${EVENT} FROM step_events
            WHERE run_id = ? ORDER BY id DESC LIMIT ?) ORDER BY id`)
              .all(runId, options.limit),
      );
    },

    async countClaims(options: { claimTtlMs: number; runId?: string }): Promise<{ total: number; orphaned: number }> {
      const counts = `SELECT count(*) AS total, coalesce(sum(${claimExpiresAtText('?')} <= ?), 0) AS orphaned FROM claims`;
      const ttl = options.claimTtlMs / 1000;
      return guard(() =>
        options.runId === undefined
          ? c.prepared<[number, number], { total: number; orphaned: number }>(counts).get(ttl, c.now())!
          : c
              .prepared<[number, number, string], { total: number; orphaned: number }>(`${counts} WHERE run_id = ?`)
              .get(ttl, c.now(), options.runId)!,
      );
    },

    async searchCommitted(runId: string, query: string, options: { limit?: number } = {}): Promise<CommittedRow[]> {
      const pattern = containsPattern(query);
      return guard(() =>
        c
          .prepared<unknown[], CommittedRow>(
            runRowsInOrder({
              columns: COMMITTED,
              id: '@runId',
              where: "idem_key LIKE @pattern ESCAPE '\\'",
              order: 'step, idemKey',
              limit: '@limit',
            }),
          )
          .all({ runId, pattern, limit: options.limit ?? 100 }),
      );
    },

    async unstableKeys(runId: string, options: { limit?: number } = {}): Promise<UnstableKeyGroup[]> {
      const limit = options.limit ?? 50;
      return guard(() => {
        const steps = c
          .prepared<unknown[], { step: number; keys: string }>(`
          SELECT step, json_group_array(idem_key) AS keys FROM (${runRowsInOrder({
            columns: 'step, idem_key',
            id: '@runId',
            where: 'step IS NOT NULL',
            order: 'step',
          })}) GROUP BY step HAVING count(*) > 1 ORDER BY step LIMIT @limit`)
          .all({ runId, limit })
          .map((r): UnstableKeyGroup => ({ step: r.step, keys: (JSON.parse(r.keys) as string[]).sort(), why: 'step' }));
        // Stepless rows (the run indexes' NULL range) that can be in a group: see shared/insights-unstable.ts.
        const candidates = c
          .prepared<unknown[], UnstableCandidate>(`SELECT ${UNSTABLE} FROM committed
          WHERE ${committedRun('= @runId')} AND step IS NULL AND (
            fingerprint IN (SELECT fingerprint FROM committed WHERE ${committedRun('= @runId')} AND step IS NULL AND fingerprint IS NOT NULL
              GROUP BY fingerprint HAVING count(*) > 1)
            OR idem_key GLOB '*[0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9]*'
            OR idem_key GLOB '*[0-9][0-9]:[0-9][0-9]:[0-9][0-9]*'
            OR lower(idem_key) GLOB '*try*' OR lower(idem_key) GLOB '*attempt*')
          ORDER BY idem_key LIMIT @cap`)
          .all({ runId, cap: UNSTABLE_CANDIDATES });
        return [...steps, ...stepless(candidates)].slice(0, limit);
      });
    },

    async lastCommittedAt(runId: string): Promise<number | null> {
      return guard(
        () =>
          c
            .prepared<unknown[], { at: number | null }>(
              `SELECT max(committed_at) AS at FROM committed WHERE ${committedRun('= @runId')}`,
            )
            .get({ runId })!.at,
      );
    },
  };
}
