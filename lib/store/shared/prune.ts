/**
 * A whole prune: batches until one removes nothing. Used by `waybill prune` and by workers that prune
 * periodically; both backends' batches are in sqlite/retention.ts and postgres/retention.ts.
 */
import { setImmediate as yieldToEventLoop } from 'node:timers/promises';
import type { PruneCounts, PruneRequest, RetentionStore } from '../contract';

export const NO_ROWS: PruneCounts = { runs: 0, external: 0, committed: 0, events: 0, progress: 0, logs: 0 };

export function addCounts(a: PruneCounts, b: PruneCounts): PruneCounts {
  return {
    runs: a.runs + b.runs,
    external: a.external + b.external,
    committed: a.committed + b.committed,
    events: a.events + b.events,
    progress: a.progress + b.progress,
    logs: a.logs + b.logs,
  };
}

/** Rows in a count: what a progress bar measures. */
export const rowsIn = (c: PruneCounts): number => c.runs + c.committed + c.events + c.progress + c.logs;

export async function pruneAll(
  store: RetentionStore,
  request: PruneRequest,
  options: { onBatch?: (batch: PruneCounts, total: PruneCounts) => void; signal?: AbortSignal } = {},
): Promise<PruneCounts> {
  let total = NO_ROWS;
  while (!options.signal?.aborted) {
    const batch = await store.pruneBatch(request);
    if (rowsIn(batch) === 0 && batch.external === 0) break;
    total = addCounts(total, batch);
    options.onBatch?.(batch, total);
    // SQLite's batches are synchronous: let heartbeats and lease renewals run between them.
    await yieldToEventLoop();
  }
  return total;
}
