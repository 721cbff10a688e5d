/**
 * The runs list's figure counts (lib/control/figures.ts), one text for both backends' lists (sqlite/run-list.ts,
 * postgres/run-list.ts), for the page's runs only: a run's committed rows, a range of committed_run_step, and of
 * them the ones not executed here (resolved by hand, forked), committed_not_executed's few entries. `executed` is
 * the difference, taken once the row is read: the committed count (a few ms for a 100,000-step run) runs once a
 * run, and no row is read for its source.
 */
import type { Dialect, RunSummary } from '../contract';
import { DIALECTS } from './dialects';

export const committedCountSql = (dialect: Dialect, runId: string) =>
  `(SELECT count(*)${DIALECTS[dialect].int} FROM committed c WHERE c.run_id = ${runId})`;

export const notExecutedCountSql = (dialect: Dialect, runId: string) =>
  `(SELECT count(*)${DIALECTS[dialect].int} FROM committed c WHERE c.run_id = ${runId} AND c.source <> 'executed')`;

/** A list's row as its statement reads it: `notExecuted` where the summary has `executed`. */
export type CountedRunSummary = Omit<RunSummary, 'executed'> & { notExecuted: number };

export function withExecuted({ notExecuted, ...row }: CountedRunSummary): RunSummary {
  return { ...row, executed: row.committed - notExecuted };
}
