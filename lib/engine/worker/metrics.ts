/**
 * What one worker process measures of itself, in prom-client, for its /metrics (health.ts). The fleet's
 * numbers (runs by status, steps by outcome, every worker's heartbeat) are the store's, served once by the
 * dashboard's /api/metrics: served by every worker too, each pod would repeat them and a sum() over the fleet
 * would count them once per worker.
 *
 * The commit histogram is observed here, commit by commit, because only the process that commits sees how
 * long it took: a true cumulative histogram, whose counts only grow for the life of the process (a restart
 * starts them at zero, which rate() takes as a counter reset).
 */
import { collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';

/**
 * Commit bounds in seconds: a commit is one transaction, half a millisecond on a local SQLite file, a few on
 * a PostgreSQL across a network, seconds only when the store is struggling.
 */
export const COMMIT_BUCKETS_S = [
  0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
] as const;

export const METRICS_CONTENT_TYPE = Registry.PROMETHEUS_CONTENT_TYPE;

export class WorkerMetrics {
  readonly registry = new Registry();
  private readonly commits: Histogram;
  private readonly runs: Gauge;
  private readonly slots: Gauge;
  private readonly heartbeat: Gauge;

  constructor(options: { defaultMetrics?: boolean } = {}) {
    const registers = [this.registry];
    this.commits = new Histogram({
      name: 'waybill_commit_duration_seconds',
      help: "How long this worker's commits took: a step's result with its progress, or a progress save, one transaction each",
      buckets: [...COMMIT_BUCKETS_S],
      registers,
    });
    this.runs = new Gauge({ name: 'waybill_worker_runs', help: 'Runs this worker is executing now', registers });
    this.slots = new Gauge({
      name: 'waybill_worker_slots',
      help: 'Runs this worker executes at once at most (--concurrency)',
      registers,
    });
    this.heartbeat = new Gauge({
      name: 'waybill_worker_last_heartbeat_timestamp_seconds',
      help: "When this worker's heartbeat last reached the store, in Unix seconds; 0 before the first",
      registers,
    });
    // The process's own (CPU, memory, event-loop lag), under prom-client's standard process_ and nodejs_ names.
    if (options.defaultMetrics ?? true) collectDefaultMetrics({ register: this.registry });
  }

  commitTook(ms: number): void {
    this.commits.observe(ms / 1000);
  }

  runsInHand(n: number, slots: number): void {
    this.runs.set(n);
    this.slots.set(slots);
  }

  heartbeatAt(ms: number): void {
    this.heartbeat.set(ms / 1000);
  }

  /** The Prometheus text format of everything above. */
  text(): Promise<string> {
    return this.registry.metrics();
  }
}
