/**
 * A store's metrics snapshot in Prometheus text format, through prom-client. The registry is built afresh
 * for each scrape and filled from the snapshot: the values are the store's, not this process's, so they are
 * right however many workers wrote them, and a worker that stopped since the last scrape has no stale line.
 */
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import { type DurationHistogram, type MetricsSnapshot, WAIT_KINDS } from '../store/contract';

/** Histogram bounds in ms: the store's, since the workers advance the stored tally of these bounds. */
export { DURATION_BOUNDS_MS } from '../store/contract';

export const METRICS_CONTENT_TYPE = Registry.PROMETHEUS_CONTENT_TYPE;

/**
 * prom-client's Histogram counts observations made in this process; ours are counted by the database. This
 * one only replaces where the values come from: naming, labels and the text format stay prom-client's.
 */
class StoredHistogram<T extends string> extends Histogram<T> {
  private readonly series: { labels: Partial<Record<T, string>>; h: DurationHistogram }[] = [];

  constructor(private readonly meta: { name: string; help: string; labelNames?: T[]; registers: Registry[] }) {
    super({ ...meta, buckets: [] });
  }

  set(labels: Partial<Record<T, string>>, h: DurationHistogram): void {
    this.series.push({ labels, h });
  }

  /** What the registry prints (prom-client 15 reads getForPromString, and get() for JSON). */
  async getForPromString(): Promise<Awaited<ReturnType<Histogram<T>['get']>>> {
    const { name, help } = this.meta;
    const values = this.series.flatMap(({ labels, h }) => [
      ...h.boundsMs.map((bound, i) => ({
        labels: { ...labels, le: bound / 1000 },
        value: h.counts[i]!,
        metricName: `${name}_bucket`,
      })),
      { labels: { ...labels, le: '+Inf' }, value: h.count, metricName: `${name}_bucket` },
      { labels, value: h.sumMs / 1000, metricName: `${name}_sum` },
      { labels, value: h.count, metricName: `${name}_count` },
    ]);
    return { name, help, type: 'histogram', aggregator: 'sum', values } as unknown as Awaited<
      ReturnType<Histogram<T>['get']>
    >;
  }

  override async get(): Promise<Awaited<ReturnType<Histogram<T>['get']>>> {
    return this.getForPromString();
  }
}

export async function renderMetrics(
  m: MetricsSnapshot,
  stalled?: { noLiveWorker: number; ownerSilent: number },
): Promise<string> {
  const registry = new Registry();
  const registers = [registry];
  // Counters read from the store: a prune lowers them, which Prometheus takes for a counter reset.
  const steps = new Counter({
    name: 'waybill_steps_total',
    help: 'Steps by outcome, as recorded in the store',
    labelNames: ['outcome'],
    registers,
  });
  for (const [outcome, n] of Object.entries(m.steps)) steps.inc({ outcome }, n);

  const claims = new Gauge({
    name: 'waybill_claims',
    help: 'Claims (side effects in flight) by state; orphaned: lease passed, outcome unknown',
    labelNames: ['state'],
    registers,
  });
  claims.set({ state: 'live' }, m.claims.live);
  claims.set({ state: 'orphaned' }, m.claims.orphaned);

  const runs = new Gauge({
    name: 'waybill_runs',
    help: "Runs by status; idle: an outside client's run with no claim",
    labelNames: ['status'],
    registers,
  });
  for (const [status, n] of Object.entries(m.runsByStatus)) runs.set({ status }, n);
  if (stalled) {
    const stalledRuns = new Gauge({
      name: 'waybill_runs_stalled',
      help: 'Runs not moving: queued with no live worker for their workflow, or running on an owner that stopped heartbeating (not counted in waybill_runs{status="running"})',
      labelNames: ['reason'],
      registers,
    });
    stalledRuns.set({ reason: 'no_live_worker' }, stalled.noLiveWorker);
    stalledRuns.set({ reason: 'owner_silent' }, stalled.ownerSilent);
  }

  const stepDuration = new StoredHistogram({
    name: 'waybill_step_duration_seconds',
    help: 'How long side effects ran: committed steps, failed attempts, attempts that lost their lease',
    labelNames: ['outcome'],
    registers,
  });
  for (const [outcome, h] of Object.entries(m.stepDurations)) stepDuration.set({ outcome }, h);

  // No commit-duration histogram here: the store keeps each run's latest commit time only, whose buckets would
  // go down as runs commit faster. Each worker observes its commits into a true one (its --health-port /metrics).

  if (m.waiting) {
    // Every kind, zero included: an alert on "oldest approval older than 1h" needs the series to exist.
    const waiting = new Gauge({
      name: 'waybill_runs_waiting',
      help: 'Runs parked at a durable wait, by the kind of wait',
      labelNames: ['kind'],
      registers,
    });
    const oldest = new Gauge({
      name: 'waybill_wait_oldest_age_seconds',
      help: 'Age of the oldest open wait of each kind, by the store clock; 0 when none',
      labelNames: ['kind'],
      registers,
    });
    for (const kind of WAIT_KINDS) {
      const row = m.waiting.find((w) => w.kind === kind);
      waiting.set({ kind }, row?.runs ?? 0);
      oldest.set({ kind }, row ? Math.max(0, row.ageSeconds) : 0);
    }
  }

  if (m.models) {
    // The ledger's sums (complete calls, retired ones included): the calls' rows stay, so they only grow.
    const tokens = new Counter({
      name: 'waybill_model_tokens_total',
      help: 'Tokens of complete model calls through the gateway, by model and kind (cached: input served from the prompt cache, part of input)',
      labelNames: ['model', 'kind'],
      registers,
    });
    const cost = new Counter({
      name: 'waybill_model_cost_usd_total',
      help: 'USD of complete model calls through the gateway by the price table, by model; unpriced calls add nothing',
      labelNames: ['model'],
      registers,
    });
    for (const row of m.models) {
      // A call whose answer named no model is under model="".
      const model = row.model ?? '';
      tokens.inc({ model, kind: 'input' }, row.inputTokens);
      tokens.inc({ model, kind: 'output' }, row.outputTokens);
      tokens.inc({ model, kind: 'cached' }, row.cachedTokens);
      cost.inc({ model }, row.costUsd);
    }
  }

  const heartbeat = new Gauge({
    name: 'waybill_worker_heartbeat_age_seconds',
    help: 'Seconds since each running worker last heartbeat, by the store clock',
    labelNames: ['worker'],
    registers,
  });
  for (const w of m.workers) heartbeat.set({ worker: w.id }, w.heartbeatAgeSeconds);

  return registry.metrics();
}
