/** What a Worker is given, and the defaults it fills in: one place to read every knob and its default. */
import type { Clock } from '../../clock';
import { loadPriceTable, type PriceTable } from '../../gateway/prices';
import type { RunStore, Store } from '../../store/contract';
import { DEFAULT_LOG_KEEP } from '../../store/shared/log-lines';
import { type Logger, silentLogger } from '../log';
import { DEFAULT_RETRY, type ResolvedRetryPolicy, resolvePolicy } from '../retry-policy';
import type { DispatchSettings } from '../webhooks/dispatch';
import type { WorkflowRegistry } from '../workflow';
import type { WorkerMetrics } from './metrics';

export interface WorkerOptions {
  store: Store & RunStore;
  registry: WorkflowRegistry;
  id?: string;
  concurrency?: number;
  /** Run lease: how long a silent worker keeps its runs. Renewed every third of it. */
  runLeaseMs?: number;
  /** Step claim lease (Checkpoint leaseMs). */
  claimLeaseMs?: number;
  claimTtlMs?: number;
  /** How often an idle worker looks for a runnable run while the store delivers no wakes (250 ms). */
  pollMs?: number;
  /**
   * How often it looks while the store does deliver them (WAYBILL_IDLE_POLL_MS, 2 s): a wake comes when a run is
   * queued, so this only catches what no commit announces, a run lease passing or a sleep's time coming.
   */
  idlePollMs?: number;
  heartbeatMs?: number;
  /** How often the worker fires the schedules whose tick has come (1 s): a tick fires at most this late. */
  scheduleMs?: number;
  /**
   * Rows of workers stopped or silent longer than this are pruned (WAYBILL_WORKER_RETENTION, 24 h), at start
   * and then hourly (or as often as the retention, when shorter).
   */
  workerRetentionMs?: number;
  /**
   * The steps' defaults under every workflow's own policy: attempts, and the full-jitter backoff's first and
   * largest wait. A workflow's `retry` and a step's options override them.
   */
  retry?: { maxAttempts?: number; baseMs?: number; maxMs?: number };
  log?: Logger;
  /** Prune finished runs older than olderThanMs, at start and then every everyMs (an hour by default). */
  prune?: { olderThanMs: number; everyMs?: number };
  /** Once the worker's row exists and before it takes a run: where `waybill worker` publishes its workflows. */
  onRegistered?: (workerId: string) => Promise<void>;
  /** Take only this run (the drill's workers, which must leave every other run alone). */
  onlyRun?: string;
  /** The lines each run's log keeps in the store (WAYBILL_RUN_LOG_LINES); 2,000 by default. */
  runLogLines?: number;
  /**
   * The control plane's address, handed to the programs command workflows spawn (`waybill worker --url`, else
   * WAYBILL_URL): they checkpoint through its HTTP protocol.
   */
  programUrl?: string;
  /** What ctx.recordUsage prices a report without a cost by (WAYBILL_GATEWAY_PRICES); the shipped table by default. */
  prices?: PriceTable;
  /**
   * Heartbeats, idle polls, run-lease renewals, step retries' backoff and the checkpoint's timers run on it.
   * Give the store's own clock (a test's ManualClock); the system clock by default.
   */
  clock?: Clock;
  /**
   * Where the worker reports what it measures of itself (its commits' durations, its runs, its heartbeat), for
   * `waybill worker --health-port`'s /metrics. Absent: a registry of its own, without the process's metrics.
   */
  metrics?: WorkerMetrics;
  /**
   * The alert webhooks' dispatcher (lib/engine/webhooks): how it posts the outbox's deliveries, or false for a
   * worker that posts none. On by default, with the dispatcher's defaults.
   */
  webhooks?: DispatchSettings | false;
}

/** The options with every default filled in (the clock and the id are the worker's own fields). */
export type ResolvedOptions = Required<
  Omit<
    WorkerOptions,
    'id' | 'retry' | 'prune' | 'onRegistered' | 'onlyRun' | 'clock' | 'programUrl' | 'metrics' | 'webhooks'
  >
> & {
  webhooks: DispatchSettings | false;
  retry: ResolvedRetryPolicy;
  prune?: WorkerOptions['prune'];
  onRegistered?: WorkerOptions['onRegistered'];
  onlyRun?: string;
  programUrl?: string;
};

export function resolveOptions(options: WorkerOptions): ResolvedOptions {
  const { clock: _clock, metrics: _metrics, ...rest } = options;
  return {
    concurrency: 1,
    runLeaseMs: 30_000,
    claimLeaseMs: 30_000,
    claimTtlMs: 30_000,
    pollMs: 250,
    idlePollMs: 2000,
    heartbeatMs: 1000,
    scheduleMs: 1000,
    runLogLines: DEFAULT_LOG_KEEP,
    workerRetentionMs: 24 * 3_600_000,
    log: silentLogger,
    webhooks: {},
    prices: options.prices ?? loadPriceTable(undefined),
    ...stripUndefined(rest),
    retry: resolvePolicy(DEFAULT_RETRY, {
      maxAttempts: options.retry?.maxAttempts,
      backoff: { initialMs: options.retry?.baseMs, maxMs: options.retry?.maxMs, jitter: true },
    }),
  };
}

/** Who a worker is, as the parts it is made of see it. */
export interface WorkerSelf {
  readonly id: string;
  readonly host: string;
  readonly machine: string | null;
  readonly clock: Clock;
  readonly o: ResolvedOptions;
  readonly metrics: WorkerMetrics;
}

function stripUndefined<T extends object>(value: T): T {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as T;
}
