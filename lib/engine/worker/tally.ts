/**
 * The workers' share of the metrics: a scrape of /api/metrics only reads the stored tally and counts the rows
 * past its marks (lib/store/shared/metrics-tally.ts), so the processes that write anyway move it on. Every
 * TALLY_EVERY_MS each worker adds one bounded chunk past the marks for the dashboard's bounds and saves it,
 * under the store's write lock; a backlog (a store upgraded from before the tally) takes a few turns of one or
 * several workers, never one long stall. The interval only bounds how much a scrape counts beyond the tally.
 */
import { type Clock, every } from '../../clock';
import { DURATION_BOUNDS_MS, type MetricsTallyStore } from '../../store/contract';
import type { Logger } from '../log';

/** How often, on the worker's clock, it advances the tally. */
export const TALLY_EVERY_MS = 30_000;

export function advanceTallyEvery(store: MetricsTallyStore, log: Logger, clock: Clock): { stop(): Promise<void> } {
  let running: Promise<void> | null = null;
  const once = async () => {
    try {
      await store.advanceMetricsTally({ boundsMs: DURATION_BOUNDS_MS });
    } catch (error) {
      log.warn('could not advance the metrics tally; trying again at the next turn', { error: String(error) });
    }
  };
  // A timer of its own never keeps a process alive; a turn still running when the next is due is not doubled.
  const stopTimer = every(
    clock,
    TALLY_EVERY_MS,
    () => {
      running ??= once().finally(() => {
        running = null;
      });
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
