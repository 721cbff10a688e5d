/**
 * Periodic retention for workers (WAYBILL_PRUNE_OLDER_THAN): prune at start, then every hour. Several
 * workers may each do so: batches pick their rows afresh and prune is idempotent, so a second worker's
 * prune finds less or nothing. Outside clients' runs are never pruned here; that is an operator's call
 * (`waybill prune --include-external`).
 */
import { pruneAll, rowsIn } from '../store/prune';
import type { RetentionStore } from '../store/types';
import type { Logger } from './log';

const HOUR_MS = 3_600_000;

export function startPruning(
  store: RetentionStore,
  options: { olderThanMs: number; everyMs?: number },
  log: Logger,
  signal: AbortSignal,
): { stop(): Promise<void> } {
  const retention = store;
  let running: Promise<void> = Promise.resolve();
  const once = async () => {
    // This host's clock: against a limit of a day or more, seconds of skew from the database do not matter.
    const before = Date.now() / 1000 - options.olderThanMs / 1000;
    try {
      const removed = await pruneAll(retention, { before }, { signal });
      if (rowsIn(removed) > 0) log.info('pruned finished runs', { olderThanMs: options.olderThanMs, ...removed });
    } catch (error) {
      log.warn('prune failed; trying again at the next interval', { error: String(error) });
    }
  };
  running = once();
  const timer = setInterval(() => {
    // At most one prune at a time in this worker: a slow one delays the next instead of overlapping it.
    running = running.then(once);
  }, options.everyMs ?? HOUR_MS);
  timer.unref();
  return {
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}
