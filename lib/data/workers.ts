import 'server-only';
/**
 * The workers page: each worker, its last heartbeat, the runs it holds, its slots, and whether it is alive.
 */
import { config } from '../config';
import { busyRuns, slotCount } from '../control/queued';
import { readStallFacts, stallSettings } from '../control/stalled';
import { isLive, liveWithinMs } from '../domain/liveness';
import type { WorkerRow } from '../store/contract';
import { getStore, heartbeatMs } from './store';

/** A worker silent this long is shown as dead: the liveness rule's window for WAYBILL_HEARTBEAT_MS. */
export const deadAfterS = (): number => liveWithinMs(heartbeatMs()) / 1000;

export interface WorkerView extends WorkerRow {
  heartbeatAge: number;
  state: 'alive' | 'silent' | 'stopped';
  /** The runs it holds in status `running`: its busy slots, as a queued run's reason counts them. */
  runs: string[];
  /** How many runs it executes at once, as a queued run's reason counts them (`slots` null: counted as 1). */
  capacity: number;
  /** The workflows it serves, as it published them; empty once it is not live (a silent worker serves none). */
  workflows: string[];
}

/**
 * Workers shown at most: the live ones first, then the most recently started. Stopped workers' rows go after
 * WAYBILL_WORKER_RETENTION, so this is a day of a large fleet's churn, never its whole history.
 */
export const WORKERS_SHOWN = 500;

export async function getWorkers(): Promise<{ workers: WorkerView[]; more: boolean }> {
  const store = await getStore();
  const [rows, facts, published] = await Promise.all([
    store.listWorkers({ limit: WORKERS_SHOWN + 1 }),
    // Read now, not the second-old shared facts: the page shows a claim as soon as it is made.
    readStallFacts(store, stallSettings(config())),
    // Live by the one liveness rule, so a worker shown alive has its list.
    store.listPublishedWorkflows({ liveWithinMs: liveWithinMs(heartbeatMs()) }),
  ]);
  const now = Date.now() / 1000;
  const workers = rows.slice(0, WORKERS_SHOWN).map(
    (w): WorkerView => ({
      ...w,
      heartbeatAge: now - w.heartbeatAt,
      state: w.stoppedAt !== null ? 'stopped' : isLive(w, now, heartbeatMs()) ? 'alive' : 'silent',
      runs: busyRuns(facts, w.id),
      capacity: slotCount(w.slots),
      workflows: published.filter((p) => p.servedBy.includes(w.id)).map((p) => p.name),
    }),
  );
  return { workers, more: rows.length > WORKERS_SHOWN };
}
