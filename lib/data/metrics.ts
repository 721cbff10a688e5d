import 'server-only';
/**
 * /api/metrics reads here: one snapshot from the store, rendered in Prometheus text format.
 */
import { DURATION_BOUNDS_MS, renderMetrics } from './metrics-text';
import { claimTtlMs, getStore } from './store';

export { METRICS_CONTENT_TYPE } from './metrics-text';

export async function getMetricsText(): Promise<string> {
  const store = await getStore();
  // One after the other: a store that fails, fails in the snapshot, whose error the route reports.
  const snapshot = await store.metricsSnapshot({ claimTtlMs: claimTtlMs(), boundsMs: DURATION_BOUNDS_MS });
  const waiting = await store.waitingSummary();
  return renderMetrics({ ...snapshot, waiting });
}
