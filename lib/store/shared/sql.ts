/**
 * SQL both backends run alike, written once: run statuses, the events a metrics scrape counts, a histogram's
 * SELECT list, and the retention fragments. Each takes the dialect flags (dialects.ts) for the few places
 * where the two differ (casts, and how committed is read by run).
 */

import type { Dialect, RunStatus } from '../contract/rows';
import { DIALECTS } from './dialects';

/** A runs row's statuses (the schemas' enum): the one list every other list is built from. */
export const RUN_STATUSES = [
  'queued',
  'running',
  'paused',
  'waiting',
  'completed',
  'failed',
  'cancelled',
  'rejected',
] as const satisfies readonly RunStatus[];
/** Runs a prune may remove: nothing will happen to them again unless an operator retries them. */
export const FINISHED_STATUSES = [
  'completed',
  'failed',
  'cancelled',
  'rejected',
] as const satisfies readonly RunStatus[];

export const EMPTY_BY_STATUS: Record<RunStatus | 'idle', number> = {
  queued: 0,
  running: 0,
  paused: 0,
  waiting: 0,
  completed: 0,
  failed: 0,
  cancelled: 0,
  rejected: 0,
  idle: 0,
};

/**
 * Runs by status, outside clients' runs (no runs row) as `running` while they hold a claim, else `idle`. The
 * outside runs are told apart in each table before the union, so the union (which sorts to drop repeats) holds
 * those few ids, not every run with progress.
 *
 * On SQLite the progress rows' outside runs are an ordered EXCEPT, which it runs as one merge of the two
 * primary keys' indexes, not a runs lookup per progress row: 100,000 runs, 25-33 → ~10 ms, the whole
 * statement 33-45 → 16-18 ms. PostgreSQL plans the NOT EXISTS as one anti-join already.
 */
const OUTSIDE_PROGRESS: Record<Dialect, string> = {
  sqlite: '(SELECT run_id FROM progress EXCEPT SELECT id FROM runs ORDER BY 1)',
  postgres: '(SELECT p.run_id FROM progress p WHERE NOT EXISTS (SELECT 1 FROM runs r WHERE r.id = p.run_id))',
};

export const STATUS_SQL = (
  dialect: Dialect,
) => `SELECT status, count(*)${DIALECTS[dialect].int} AS n FROM runs GROUP BY status
  UNION ALL
  SELECT CASE WHEN EXISTS (SELECT 1 FROM claims c WHERE c.run_id = x.run_id) THEN 'running' ELSE 'idle' END, 1
  FROM (SELECT o.run_id FROM ${OUTSIDE_PROGRESS[dialect]} o
    UNION SELECT c.run_id FROM claims c WHERE NOT EXISTS (SELECT 1 FROM runs r WHERE r.id = c.run_id)) x`;

/**
 * Step outcomes from step_events. Skips and awaits are folded events (one per progress write, `count` says
 * how many); the rest are one event per key. A run-level takeover is also recorded as `expired`, with no
 * key: it is not a step, so only keyed events count for the per-key outcomes.
 */
export const COUNTED_EVENTS = `outcome IN ('skipped', 'awaited')
  OR (idem_key IS NOT NULL AND outcome IN ('failed', 'lease_lost', 'expired', 'resolved', 'key_reuse'))`;

/**
 * SELECT list of a histogram over `column`: count as n, sum as total, then b0…bN-1 as cumulative bucket counts.
 * The bounds are written into the text as numbers, so the list fits a statement of either parameter style
 * (the metrics tally's fold runs in the rewind plans' `?` statements).
 */
export function histogramColumns(dialect: Dialect, column: string, boundsMs: readonly number[]): string {
  const { float } = DIALECTS[dialect];
  const buckets = boundsMs.map((bound, i) => {
    if (!Number.isFinite(bound)) throw new Error(`a histogram bound must be a finite number, got ${bound}`);
    return `coalesce(sum(CASE WHEN ${column} <= ${bound} THEN 1 ELSE 0 END), 0)${float} AS b${i}`;
  });
  return [`count(${column})${float} AS n`, `coalesce(sum(${column}), 0)${float} AS total`, ...buckets].join(', ');
}

/** Finished runs before `before` (a SQL value) with no claim (a claim, even orphaned, is an operator's open question). */
export const PRUNABLE_RUNS = (before: string) => `SELECT r.id FROM runs r
  WHERE r.status IN (${FINISHED_STATUSES.map((s) => `'${s}'`).join(', ')}) AND coalesce(r.finished_at, r.updated_at) < ${before}
    AND NOT EXISTS (SELECT 1 FROM claims c WHERE c.run_id = r.id)`;

/** Outside clients' runs (no runs row) whose every row was written before `before`, with no claim. */
export const PRUNABLE_EXTERNAL = (dialect: Dialect, before: string) => `SELECT x.run_id AS id FROM (
    SELECT run_id FROM progress UNION ${DIALECTS[dialect].committedRunIds} UNION SELECT run_id FROM step_events) x
  WHERE NOT EXISTS (SELECT 1 FROM runs r WHERE r.id = x.run_id)
    AND NOT EXISTS (SELECT 1 FROM claims c WHERE c.run_id = x.run_id)
    AND coalesce((SELECT updated_at FROM progress p WHERE p.run_id = x.run_id), 0) < ${before}
    AND coalesce((SELECT max(committed_at) FROM committed c WHERE ${DIALECTS[dialect].committedRun('= x.run_id', 'c.')}), 0) < ${before}
    AND coalesce((SELECT max(at) FROM step_events e WHERE e.run_id = x.run_id), 0) < ${before}`;

/** Whether the run whose id is the SQL expression `id` still has committed rows, events or log lines. */
export const HAS_ROWS = (
  dialect: Dialect,
  id: string,
) => `(EXISTS (SELECT 1 FROM committed c WHERE ${DIALECTS[dialect].committedRun(`= ${id}`, 'c.')})
  OR EXISTS (SELECT 1 FROM step_events e WHERE e.run_id = ${id})
  OR EXISTS (SELECT 1 FROM run_logs l WHERE l.run_id = ${id}))`;

/** The plan (dry run) of a prune over `doomed (id, external)`, whose `external` is a boolean in SQL. */
export const PLAN_COUNTS = (dialect: Dialect, external: (flag: boolean) => string) => {
  const { int, committedRun } = DIALECTS[dialect];
  return `SELECT (SELECT count(*) FROM doomed WHERE external = ${external(false)})${int} AS runs,
    (SELECT count(*) FROM doomed WHERE external = ${external(true)})${int} AS external,
    (SELECT count(*) FROM committed WHERE ${committedRun('IN (SELECT id FROM doomed)')})${int} AS committed,
    (SELECT count(*) FROM step_events WHERE run_id IN (SELECT id FROM doomed))${int} AS events,
    (SELECT count(*) FROM progress WHERE run_id IN (SELECT id FROM doomed))${int} AS progress,
    (SELECT count(*) FROM run_logs WHERE run_id IN (SELECT id FROM doomed))${int} AS logs`;
};
