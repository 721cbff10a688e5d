/** Rewinding runs (rerun and fork from a step) and the step page's read: see shared/rewind.ts for the design. */
import type { ForkRequest, HistoryRow, LetGoChild, RerunRequest, RewindOutcome, RewindSpan } from '../shared/rewind';
import type { ClaimRow, CommittedRow, StepEvent } from './rows';

export type { ForkRequest, HistoryRow, LetGoChild, RerunRequest, RewindOutcome, RewindSpan } from '../shared/rewind';

/** One bar of the run page's trace: an attempt of a step, from its start (end − duration) to its end. */
export interface TraceBar {
  step: number;
  outcome: 'committed' | 'failed' | 'expired' | 'lease_lost';
  endAt: number;
  durationMs: number | null;
  workerId: string | null;
}

/** Everything recorded of one step of one run, oldest first. */
export interface StepRecord {
  committed: CommittedRow | null;
  /** Earlier results a rerun replaced, oldest first. */
  history: HistoryRow[];
  /** The step's events (failed attempts, takeovers, lost leases, operator notes), oldest first, at most `limit`. */
  events: StepEvent[];
  /** The claim in flight on it, if any (orphaned not decided: the caller's clock does). */
  claim: Omit<ClaimRow, 'orphaned'> | null;
}

export interface RewindStore {
  /**
   * One transaction: the run's committed results from step N on move to committed_history, its orphaned
   * claims are deleted, progress returns to N and the run is queued (with the edited input, if given).
   * RewindRefusedError, with nothing changed, for a run with no row, not completed/failed/cancelled/paused,
   * N beyond its last step, or a live claim.
   */
  rerunRun(request: RerunRequest): Promise<RewindOutcome>;
  /** One transaction: a new queued run whose committed steps < N are copied (source `forked`); the original untouched. */
  forkRun(request: ForkRequest): Promise<RewindOutcome>;
  /**
   * A read: the steps a rerun or fork from N would redo (N through the run's last step), with the refusals
   * rerunRun and forkRun give for them (no runs row, N beyond the last step). Status and claims are not judged.
   */
  rewindSpan(runId: string, fromStep: number): Promise<RewindSpan>;
  /**
   * A read: the child runs a rerun from N would let go (those the steps it moves started, still the run's own), by
   * the rerun's own rule, and its refusals for them (a child not ended, or pruned). Nothing else is judged.
   */
  rerunLetGo(runId: string, fromStep: number): Promise<LetGoChild[]>;
  /** The step page's rows. */
  readStep(runId: string, step: number, limit?: number): Promise<StepRecord>;
  /** The attempts of steps [from, from + count) for the run page's trace; count is bounded by the caller. */
  readTrace(runId: string, from: number, count: number): Promise<TraceBar[]>;
  /**
   * Which step a name stands for: the lowest step number recorded under any of these keys in the run (its
   * committed row, history or events). found false: nothing is recorded under them; step null: only keyless rows.
   */
  stepOfKeys(runId: string, keys: string[]): Promise<{ found: boolean; step: number | null }>;
  /** Runs forked from this one, oldest first (at most 20). */
  listForks(runId: string): Promise<{ id: string; forkedAtStep: number | null; createdAt: number }[]>;
}
