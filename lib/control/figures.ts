/**
 * A run's figures, defined once: the runs list, the run page, `waybill runs` / `waybill inspect` and the API
 * (`figures` in its run views) all show these and only these, so no two places can disagree.
 *
 * The definitions follow what a Temporal or Inngest user reads them as:
 *
 * - **committed**: the run's results that stand now, the rows of `committed` (executed here, resolved by hand,
 *   or copied by a fork). A rerun from step N moves the results of steps ≥ N into history: they stop counting.
 * - **executed**: of those, the ones whose side effect ran in this run (source `executed`): the current
 *   execution's work. What earlier executions did before a rerun is history, counted apart (the run page).
 *   The run page's cumulative chart plots the same rows, so its last point is this figure.
 * - **done / total, percent**: how far the run is. `done` is the furthest of its saved map's step (a stepped
 *   loop, an outside client's `progress`) and its committed results (named steps, `ctx.step`, which save no
 *   map), never past the total. A completed run is done: `total/total`, 100%, whatever it saved. Without a
 *   total there is no percent, except 100 for a completed run.
 * - **skipped / awaited**: steps found already committed on a replay (a resume after a crash, a rerun) or
 *   committed meanwhile by another holder, as the run's progress writes record them, every execution.
 *
 * Inputs are counts the store reads per run (RunSummary for a list, the detail's reads for one run).
 */
import type { ClaimStore, InsightStore, ProgressRow, RunStatus } from '../store/contract';

export interface FigureFacts {
  status: RunStatus | 'idle';
  totalSteps: number | null;
  /** The saved map's step (progress.step): the next step to run. 0 with no progress. */
  step: number;
  /** The run's rows in `committed`. */
  committed: number;
  /** Of them, source `executed`. */
  executed: number;
  skipped: number;
  awaited: number;
}

export interface RunFigures {
  done: number;
  total: number | null;
  /** Whole percent, rounded down (a run 99.9% through is not 100%); null without a total. */
  percent: number | null;
  committed: number;
  executed: number;
  skipped: number;
  awaited: number;
}

export function runFigures(facts: FigureFacts): RunFigures {
  const total = facts.totalSteps;
  const reached = Math.max(facts.step, facts.committed);
  const done = total === null ? reached : facts.status === 'completed' ? total : Math.min(total, reached);
  const percent =
    facts.status === 'completed' ? 100 : total === null || total <= 0 ? null : Math.floor((done * 100) / total);
  return {
    done,
    total,
    percent,
    committed: facts.committed,
    executed: facts.executed,
    skipped: facts.skipped,
    awaited: facts.awaited,
  };
}

/**
 * One run's figures read from the store (the API's GET /runs/:id, `waybill inspect`): its committed rows
 * counted, the executed among them by the run page's own chart read in one bucket, and its progress.
 */
export async function readRunFigures(
  store: Pick<InsightStore, 'commitBuckets'> & Pick<ClaimStore, 'countCommitted'>,
  run: { id: string; status: FigureFacts['status']; totalSteps: number | null },
  progress: Pick<ProgressRow, 'step' | 'skipped' | 'awaited'> | null,
  committed?: number,
): Promise<RunFigures> {
  const [count, buckets] = await Promise.all([
    committed ?? store.countCommitted(run.id),
    store.commitBuckets(run.id, { buckets: 1 }),
  ]);
  return runFigures({
    status: run.status,
    totalSteps: run.totalSteps,
    step: progress?.step ?? 0,
    committed: count,
    executed: buckets.reduce((n, b) => n + b.executed, 0),
    skipped: progress?.skipped ?? 0,
    awaited: progress?.awaited ?? 0,
  });
}
