/**
 * Where a queued run stands for a free place under its workflow's concurrency key, for the reason a held run gives
 * (lib/control/queued.ts): while the key has places free, the pick gives them to its queued runs in its order, so a
 * run behind as many runs as there are free places waits for them, not for a slot. Read for a view, never by the
 * pick; the places, starts and key are the pick's own (run-limits-sql.ts), so the line counts what the pick weighs.
 */
import { LINE_COUNTED, type RunLimits } from '../../domain/run-limits';
import type { Dialect } from '../contract';
import { aheadInPickSql, hintSql } from './rate-line-sql';
import { limitKeySql, USE_PLACES, USE_STARTS } from './run-limits-sql';

/**
 * limitUse's `placeAhead` column for `run` (a runs row under `alias`, in a statement with limitUseWith's CTEs): how
 * many of its workflow's queued runs under its concurrency key the pick takes before it into a free place, counted up
 * to LINE_COUNTED. NULL when no concurrency limit is given, when the key has no place free (the reason is then the
 * places' count, which every run of the key shares), or when the run holds a place itself (a step of it still in
 * hand: it needs none freed).
 *
 * A run ahead counts when the pick would take it: queued, holding no place of its own (it takes none from the free
 * ones), and not held by the workflow's rate limit now (a run that never started, under a rate key whose window is
 * full: the pick passes it by), as rate-line-sql.ts leaves out the runs this limit holds. The queued runs are read
 * by status, past the ones without the key's `hint` (SQL, NULL for none), as the rate line reads them.
 */
export function placeAheadSql(dialect: Dialect, limits: RunLimits, alias: string, hint: string): string {
  const { concurrency, rateLimit } = limits;
  if (!concurrency) return 'NULL';
  const path = concurrency.key;
  const key = (table: string) => limitKeySql(dialect, table, path);
  const queued = dialect === 'sqlite' ? 'runs lq INDEXED BY runs_status_updated' : 'runs lq';
  const unrated = rateLimit
    ? `AND (lq.started_at IS NOT NULL OR ${limitKeySql(dialect, 'lq', rateLimit.key)} NOT IN
        (SELECT s.k FROM ${USE_STARTS} s GROUP BY s.k HAVING count(*) >= ${rateLimit.limit}))`
    : '';
  return `(CASE WHEN ${alias}.id IN (SELECT h.id FROM ${USE_PLACES} h)
      OR (SELECT count(*) FROM ${USE_PLACES} h WHERE h.k = ${key(alias)}) >= ${concurrency.limit} THEN NULL
    ELSE (SELECT count(*) FROM (SELECT 1 FROM ${queued} WHERE lq.workflow = ${alias}.workflow AND lq.status = 'queued'
      AND lq.id <> ${alias}.id AND ${aheadInPickSql(dialect, 'lq', alias)}
      ${hintSql(dialect, 'lq', path, hint)} AND ${key('lq')} = ${key(alias)}
      AND lq.id NOT IN (SELECT h.id FROM ${USE_PLACES} h) ${unrated}
      LIMIT ${LINE_COUNTED}) ahead) END)`;
}
