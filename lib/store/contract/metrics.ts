/** What a metrics scrape reads from the store: counts and histograms, computed in the database. */
import type { ModelUsageRow } from './model-calls';
import type { RunStatus } from './rows';
import type { WaitKind } from './waits';

/** Cumulative counts of durations at or under each bound, as a Prometheus histogram wants them. */
export interface DurationHistogram {
  /** The bucket bounds asked for, in ms, ascending. */
  boundsMs: number[];
  /** counts[i]: how many durations are ≤ boundsMs[i]. */
  counts: number[];
  count: number;
  sumMs: number;
}

/**
 * The step-duration histograms' bounds in ms, from a fast local step to a slow model call and the 5 minutes of a
 * stuck one: what /api/metrics asks for, and so the bounds whose stored tally the workers advance.
 */
export const DURATION_BOUNDS_MS = [
  5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10_000, 30_000, 60_000, 300_000,
] as const;

/** The outcomes a metrics scrape counts: `executed` is a committed row, the rest are step_events. */
export const METRIC_OUTCOMES = [
  'executed',
  'skipped',
  'awaited',
  'failed',
  'lease_lost',
  'expired',
  'resolved',
  'key_reuse',
] as const;
export type MetricOutcome = (typeof METRIC_OUTCOMES)[number];

/** Everything `/api/metrics` shows, read from the store at scrape time: right across any number of workers. */
export interface MetricsSnapshot {
  /** Steps by outcome since the store began (less what was pruned). */
  steps: Record<MetricOutcome, number>;
  claims: { live: number; orphaned: number };
  runsByStatus: Record<RunStatus | 'idle', number>;
  /** How long side effects ran: committed steps (`executed`), and the attempts that `failed` or lost their lease. */
  stepDurations: Record<'executed' | 'failed' | 'lease_lost', DurationHistogram>;
  /** Runs parked at a durable wait, by kind, and the age of each kind's oldest open wait (store clock). Absent: not read. */
  waiting?: { kind: WaitKind; runs: number; ageSeconds: number }[];
  /** The gateway's complete model calls summed by model (ModelCallStore.sumModelCalls). Absent: not read. */
  models?: ModelUsageRow[];
  /** Workers not stopped, and how long ago each last heartbeat, by the store's clock. */
  workers: { id: string; heartbeatAgeSeconds: number }[];
}

/**
 * The writers' side of the stored metrics tally (shared/metrics-tally.ts): a scrape only reads it, and the
 * processes that write anyway (the workers) move it on.
 */
export interface MetricsTallyStore {
  /**
   * Adds one bounded chunk of the committed rows and step events past the stored tally's marks for these
   * bounds to it, under the write lock, and saves it (made on first use). `done`: nothing is left past the marks.
   */
  advanceMetricsTally(options: {
    boundsMs: readonly number[];
    /** PostgreSQL: rows younger than this are left to a later turn (InsightStore.metricsSnapshot's). Default 10 s. */
    settleMs?: number;
  }): Promise<{ done: boolean }>;
}
