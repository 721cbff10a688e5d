/**
 * The runs list's figure counts (lib/control/figures.ts), one text for both backends' lists (sqlite/run-list.ts,
 * postgres/run-list.ts), for the page's runs only: a run's committed rows, and of them the ones not executed here
 * (resolved by hand, forked), committed_not_executed's few entries. `executed` is the difference, taken once the
 * row is read, so no row is read for its source.
 *
 * The committed rows are the run's progress row's committed_count, kept by the store wherever rows are added or
 * removed (migrations 0027 SQLite, 0034 PostgreSQL): a lookup in the row the list reads anyway. Only a run with
 * no progress row (a workflow that never saved progress, an outside client's committed-only run), or one whose
 * count is unknown, is counted: a range of the run's index (two on SQLite), a few ms for a 100,000-step run. COALESCE
 * evaluates its second argument only when the first is null, on both backends.
 */
import type { Dialect, RunSummary } from '../contract';
import { DIALECTS } from './dialects';

/** `progress`: the alias of the run's progress row, left-joined (null when it has none). */
export const committedCountSql = (dialect: Dialect, runId: string, progress: string | null) => {
  const { int, committedRun } = DIALECTS[dialect];
  const counted = `(SELECT count(*)${int} FROM committed c WHERE ${committedRun(`= ${runId}`, 'c.')})`;
  return progress ? `coalesce(${progress}.committed_count, ${counted})` : counted;
};

export const notExecutedCountSql = (dialect: Dialect, runId: string) =>
  `(SELECT count(*)${DIALECTS[dialect].int} FROM committed c WHERE c.run_id = ${runId} AND c.source <> 'executed')`;

/** A list's row as its statement reads it: `notExecuted` where the summary has `executed`. */
export type CountedRunSummary = Omit<RunSummary, 'executed'> & { notExecuted: number };

export function withExecuted({ notExecuted, ...row }: CountedRunSummary): RunSummary {
  return { ...row, executed: row.committed - notExecuted };
}
