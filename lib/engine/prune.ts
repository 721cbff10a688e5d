/**
 * Periodic retention in workers. Finished runs (WAYBILL_PRUNE_OLDER_THAN, when set): prune at start, then every
 * hour. Workers' own rows (WAYBILL_WORKER_RETENTION, always): the same, one DELETE each time. Several
 * workers may each do so: batches pick their rows afresh and prune is idempotent, so a second worker's
 * prune finds less or nothing. Outside clients' runs are never pruned here; that is an operator's call
 * (`waybill prune --include-external`).
 */
import { type Clock, every, systemClock } from '../clock';
import type { RetentionStore, WorkerStore } from '../store/contract';
import { pruneAll, rowsIn } from '../store/shared/prune';
import type { Logger } from './log';

const HOUR_MS = 3_600_000;

export function startPruning(
  store: RetentionStore,
  options: { olderThanMs: number; everyMs?: number },
  log: Logger,
  signal: AbortSignal,
  clock: Clock = systemClock,
): { stop(): Promise<void> } {
  const retention = store;
  let running: Promise<void> = Promise.resolve();
  const once = async () => {
    // This host's clock: against a limit of a day or more, seconds of skew from the database do not matter.
    const before = clock.now() / 1000 - options.olderThanMs / 1000;
    try {
      const removed = await pruneAll(retention, { before }, { signal });
      if (rowsIn(removed) > 0) log.info('pruned finished runs', { olderThanMs: options.olderThanMs, ...removed });
    } catch (error) {
      log.warn('prune failed; trying again at the next interval', { error: String(error) });
    }
  };
  running = once();
  // An hourly prune never keeps a process alive on its own.
  const stopTimer = every(
    clock,
    options.everyMs ?? HOUR_MS,
    () => {
      // At most one prune at a time in this worker: a slow one delays the next instead of overlapping it.
      running = running.then(once);
    },
    { keepAlive: false },
  );
  return {
    async stop() {
      stopTimer();
      await running;
    },
  };
}

/**
 * Deletes the rows of workers stopped or silent past the retention, at start and then hourly (as often as the
 * retention, when that is shorter): one short DELETE over a table that then holds the live fleet and a day of
 * its history, so neither it nor any read of it grows with the fleet's age. A failure waits for the next time.
 */
export function pruneWorkersEvery(
  store: Pick<WorkerStore, 'pruneWorkers'>,
  retentionMs: number,
  log: Logger,
  clock: Clock = systemClock,
): { stop(): Promise<void> } {
  const once = async () => {
    try {
      const pruned = await store.pruneWorkers(retentionMs);
      if (pruned > 0) log.info('pruned the rows of long-stopped workers', { retentionMs, pruned });
    } catch (error) {
      log.warn('worker prune failed; trying again at the next interval', { error: String(error) });
    }
  };
  let running = once();
  const stopTimer = every(
    clock,
    Math.min(HOUR_MS, retentionMs),
    () => {
      running = running.then(once);
    },
    { keepAlive: false },
  );
  return {
    async stop() {
      stopTimer();
      await running;
    },
  };
}
