/** Retention: what a prune may remove, and the interface that removes it in short batches. */

export interface PruneRequest {
  /**
   * Epoch seconds: finished runs (completed, failed, cancelled) whose finish is before this go, with their
   * committed rows, events and progress. Queued, running and paused runs, and runs with a claim, never do.
   */
  before: number;
  /**
   * Outside clients' runs (rows with no runs row) too, when their last write is before `before` and they
   * hold no claim. Off by default: such a client may come back to its run, and would start it over.
   */
  includeExternal?: boolean;
  /** At most this many committed rows and events are deleted per transaction, so no lock is held long. */
  batchSize?: number;
}

/** Rows a prune removed (or, planned, would remove). `runs` counts runs rows; `external` outside clients' runs. */
export interface PruneCounts {
  runs: number;
  external: number;
  committed: number;
  events: number;
  progress: number;
  /** Lines of the runs' logs (run_logs). */
  logs: number;
}

/**
 * Retention. A pruned key can no longer deduplicate: a step replayed with it executes again. Callers keep
 * the limit above the longest time a client may retry (the CLI refuses less than 24 hours unless forced).
 */
export interface RetentionStore {
  /** What pruning now would remove, counted without deleting: the dry run, and a progress bar's total. */
  planPrune(request: PruneRequest): Promise<PruneCounts>;

  /**
   * One short transaction of a prune: removes up to `batchSize` log lines, committed rows and events of prunable runs,
   * then the progress and runs rows of those left with none. A run's runs row goes last, so an interrupted
   * prune leaves a finished run with less history, which the next prune finishes. All zero: nothing is left.
   */
  pruneBatch(request: PruneRequest): Promise<PruneCounts>;
}
