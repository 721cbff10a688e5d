import 'server-only';
import type { StallCount } from '../control/stalled';
import type { RunStats } from '../store/contract';
/**
 * /api/metrics reads here: one snapshot from the store, rendered in Prometheus text format.
 */
import { DURATION_BOUNDS_MS, renderMetrics } from './metrics-text';
import { getStallCount } from './stalled';
import { claimTtlMs, getStore } from './store';

export { METRICS_CONTENT_TYPE } from './metrics-text';

export async function getMetricsText(): Promise<string> {
  const store = await getStore();
  // The snapshot first: a store that fails, fails in it, whose error the route reports.
  const snapshot = await store.metricsSnapshot({ claimTtlMs: claimTtlMs(), boundsMs: DURATION_BOUNDS_MS });
  const [stalled, waiting, models] = await Promise.all([
    getStallCount(),
    store.waitingSummary(),
    store.sumModelCalls({}),
  ]);
  // A run whose owner went silent is not running: counted under waybill_runs_stalled instead.
  return renderMetrics(
    { ...snapshot, runsByStatus: withoutStalled(snapshot.runsByStatus, stalled), waiting, models },
    stalled,
  );
}

/**
 * Prometheus's `waybill_runs{status="running"}` counts the runs that move: one whose owner went silent is in
 * `waybill_runs_stalled` instead, so an alert on "running fell to 0" fires when the fleet stopped. The pages
 * count it running, by its status, and show it stalled beside.
 */
function withoutStalled(byStatus: RunStats['byStatus'], stalled: StallCount): RunStats['byStatus'] {
  return { ...byStatus, running: Math.max(0, (byStatus.running ?? 0) - stalled.ownerSilent) };
}
