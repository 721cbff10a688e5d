/** What the control plane reads to explain a run: aggregates, series and warnings, computed in the store. */

import type { MetricsSnapshot } from './metrics';
import type { CommittedRow, Outcome, RunStatus, StepEvent } from './rows';

export interface RunStats {
  byStatus: Record<RunStatus | 'idle', number>;
  /** Summed over every run's progress counters. */
  executed: number;
  skipped: number;
  awaited: number;
  /** Keys committed since the given time, across all runs. */
  committedSince: number;
  orphanedClaims: number;
}

export interface StepTiming {
  step: number | null;
  idemKey: string;
  committedAt: number;
  durationMs: number | null;
  source: 'executed' | 'manual';
}

/** Committed steps of a run grouped by step range, for a chart that never gets more points than buckets. */
export interface StepBucket {
  fromStep: number;
  toStep: number;
  /** Committed rows in the range (each step once, unless it was committed under several keys). */
  count: number;
  avgMs: number | null;
  maxMs: number | null;
}

/** What happened in one slice of a run's lifetime: executed commits, and skips and awaits from their events. */
export interface CommitBucket {
  /** The slice's end, epoch seconds. */
  t: number;
  executed: number;
  skipped: number;
  awaited: number;
}
/** What the control plane reads to explain a run: aggregates, series and warnings, computed in the store. */
/**
 * Keys that name one piece of work: `step` when they share a step number; otherwise (`step` null) why they are
 * taken for one: the same input fingerprint, or keys equal but for the time they ran or an attempt counter.
 */
export interface UnstableKeyGroup {
  step: number | null;
  keys: string[];
  why: 'step' | 'fingerprint' | 'time' | 'attempt';
}

export interface InsightStore {
  /** Counts across all runs, outside clients' included. */
  runStats(options: { sinceSeconds: number; claimTtlMs: number }): Promise<RunStats>;

  /** A run's committed steps without their results, in step order: for charts. At most `limit` rows. */
  listStepTimings(runId: string, options?: { limit?: number }): Promise<StepTiming[]>;

  /**
   * A run's committed steps in at most `buckets` ranges of equal width, in step order; rows with no step
   * are left out. One GROUP BY in the database: a 100,000-step run never crosses the wire row by row.
   */
  stepTimingBuckets(runId: string, options: { buckets: number }): Promise<StepBucket[]>;

  /** A run's executed commits and folded skip/await events in at most `buckets` equal slices of time. */
  commitBuckets(runId: string, options: { buckets: number }): Promise<CommitBucket[]>;

  /** The last `limit` committed steps of a run (the page's order: step, then key), returned in that order. */
  recentSteps(runId: string, options: { limit: number }): Promise<StepTiming[]>;

  /** The last `limit` events of a run, optionally of one outcome, oldest first. */
  recentEvents(runId: string, options: { limit: number; outcome?: Outcome }): Promise<StepEvent[]>;

  /** How many claims there are (of one run, or all), and how many of them are orphaned (lease passed by the store's clock). */
  countClaims(options: { claimTtlMs: number; runId?: string }): Promise<{ total: number; orphaned: number }>;

  /** Committed rows of a run whose key contains `query`, in step order. */
  searchCommitted(runId: string, query: string, options?: { limit?: number }): Promise<CommittedRow[]>;

  /**
   * Work committed under more than one key: the keys changed across resumes (time or attempt mixed in), so
   * idempotency was void for it. Steps first, by step; then stepless groups (shared/insights-unstable.ts has the rules).
   */
  unstableKeys(runId: string, options?: { limit?: number }): Promise<UnstableKeyGroup[]>;

  /** The latest committed_at of a run's rows, or null: an outside client's run without progress is dated by it. */
  lastCommittedAt(runId: string): Promise<number | null>;

  /**
   * Counts and histograms for a metrics scrape, computed in the database (buckets are counted with SQL, no
   * rows are loaded). `boundsMs` are the histogram bucket bounds, ascending. Writes nothing: the growing
   * counts are the stored tally plus the rows past its marks (shared/metrics-tally.ts).
   */
  metricsSnapshot(options: {
    claimTtlMs: number;
    boundsMs: readonly number[];
    /**
     * PostgreSQL: committed rows and events younger than this are counted by a later scrape, so that a
     * transaction still in flight when one scrape reads cannot be skipped by the next. Default 10 s.
     */
    settleMs?: number;
  }): Promise<MetricsSnapshot>;
}
