/**
 * Where a queued run stands for a free place under its workflow's concurrency key, for the reason a held run gives
 * (lib/control/queued.ts): while the key has places free, the pick gives them to its queued runs in its order, so a
 * run behind as many runs as there are free places waits for them, not for a slot. Read for a view, never by the
 * pick; the places, starts and key are the pick's own (run-limits-sql.ts), so the line counts what the pick weighs.
 */
import { LINE_COUNTED, type RunLimits } from '../../domain/run-limits';
import type { Dialect } from '../contract';
import { limitKeySql, USE_PLACES, USE_STARTS } from './run-limits-sql';

/** The CTE placeLineWith names the line in: columns `id`, `rn` (1: the first the pick takes under its key). */
const USE_LINE = 'use_line';

const literal = (text: string): string => `'${text.replaceAll("'", "''")}'`;

/**
 * The CTE (`use_line AS MATERIALIZED (…)`) of the workflow's queued runs the pick would give a free place, each
 * with its place under its concurrency key, or null when no concurrency limit is given. In a statement with
 * limitUseWith's CTEs. A run counts when the pick would take it: queued, holding no place of its own (it takes
 * none from the free ones), and not held by the workflow's rate limit now (a run that never started, under a rate
 * key whose window is full: the pick passes it by). Ranked in the pick's ORDER BY (priority, then age, then id; on
 * PostgreSQL ids in "C" order, as the pick sorts them). One pass over the workflow's queued runs, read by status
 * as the pick's places are, whatever the number of runs a list asks about.
 */
export function placeLineWith(dialect: Dialect, workflow: string, limits: RunLimits): string | null {
  const { concurrency, rateLimit } = limits;
  if (!concurrency) return null;
  const queued = dialect === 'sqlite' ? 'runs q INDEXED BY runs_status_updated' : 'runs q';
  const id = dialect === 'postgres' ? 'lq.id COLLATE "C"' : 'lq.id';
  const unrated = rateLimit
    ? `AND (q.started_at IS NOT NULL OR ${limitKeySql(dialect, 'q', rateLimit.key)} NOT IN
        (SELECT s.k FROM ${USE_STARTS} s GROUP BY s.k HAVING count(*) >= ${rateLimit.limit}))`
    : '';
  return `${USE_LINE} AS MATERIALIZED (SELECT lq.id,
      row_number() OVER (PARTITION BY lq.k ORDER BY lq.priority DESC, lq.created_at, ${id}) AS rn
    FROM (SELECT q.id, q.priority, q.created_at, ${limitKeySql(dialect, 'q', concurrency.key)} AS k FROM ${queued}
      WHERE q.status = 'queued' AND q.workflow = ${literal(workflow)}
        AND q.id NOT IN (SELECT h.id FROM ${USE_PLACES} h) ${unrated}) lq)`;
}

/**
 * limitUse's `placeAhead` column for `run` (a runs row under `alias`, in a statement with placeLineWith's CTE): how
 * many runs of the line are ahead of it, counted up to LINE_COUNTED. NULL when no concurrency limit is given, when
 * the key has no place free (the reason is then the places' count, which every run of the key shares), when the
 * run holds a place itself (a step of it still in hand: it needs none freed), or when it is not in the line (its
 * rate limit holds it, and says so).
 */
export function placeAheadSql(dialect: Dialect, limits: RunLimits, alias: string): string {
  const { concurrency } = limits;
  if (!concurrency) return 'NULL';
  const key = limitKeySql(dialect, alias, concurrency.key);
  const capped = dialect === 'postgres' ? `least(l.rn - 1, ${LINE_COUNTED})` : `min(l.rn - 1, ${LINE_COUNTED})`;
  return `(CASE WHEN ${alias}.id IN (SELECT h.id FROM ${USE_PLACES} h)
      OR (SELECT count(*) FROM ${USE_PLACES} h WHERE h.k = ${key}) >= ${concurrency.limit} THEN NULL
    ELSE (SELECT ${capped} FROM ${USE_LINE} l WHERE l.id = ${alias}.id) END)`;
}
