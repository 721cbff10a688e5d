/**
 * The Store interface's types for watching and trimming a store: the metrics snapshot a scrape reads, and
 * retention (prune). Kept apart from types.ts, which re-exports them, so that file stays the protocol's.
 */
import type { RunStatus } from './types';

/** Cumulative counts of durations at or under each bound, as a Prometheus histogram wants them. */
export interface DurationHistogram {
  /** The bucket bounds asked for, in ms, ascending. */
  boundsMs: number[];
  /** counts[i]: how many durations are ≤ boundsMs[i]. */
  counts: number[];
  count: number;
  sumMs: number;
}

/** The outcomes a metrics scrape counts: `executed` is a committed row, the rest are step_events. */
export const METRIC_OUTCOMES = ['executed', 'skipped', 'awaited', 'failed', 'lease_lost', 'expired', 'resolved', 'key_reuse'] as const;
export type MetricOutcome = (typeof METRIC_OUTCOMES)[number];

/** Everything `/api/metrics` shows, read from the store at scrape time: right across any number of workers. */
export interface MetricsSnapshot {
  /** Steps by outcome since the store began (less what was pruned). */
  steps: Record<MetricOutcome, number>;
  claims: { live: number; orphaned: number };
  runsByStatus: Record<RunStatus | 'idle', number>;
  /** How long side effects ran: committed steps (`executed`), and the attempts that `failed` or lost their lease. */
  stepDurations: Record<'executed' | 'failed' | 'lease_lost', DurationHistogram>;
  /** The latest measured commit (progress write) of each run: progress.save_ms. */
  commitDurations: DurationHistogram;
  /** Workers not stopped, and how long ago each last heartbeat, by the store's clock. */
  workers: { id: string; heartbeatAgeSeconds: number }[];
}


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
}

/**
 * Retention. A pruned key can no longer deduplicate: a step replayed with it executes again. Callers keep
 * the limit above the longest time a client may retry (the CLI refuses less than 24 hours unless forced).
 */
export interface RetentionStore {
  /** What pruning now would remove, counted without deleting: the dry run, and a progress bar's total. */
  planPrune(request: PruneRequest): Promise<PruneCounts>;

  /**
   * One short transaction of a prune: removes up to `batchSize` committed rows and events of prunable runs,
   * then the progress and runs rows of those left with none. A run's runs row goes last, so an interrupted
   * prune leaves a finished run with less history, which the next prune finishes. All zero: nothing is left.
   */
  pruneBatch(request: PruneRequest): Promise<PruneCounts>;
}
