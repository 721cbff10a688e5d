import 'server-only';
/**
 * The workers page: each worker, its last heartbeat, the runs it holds, and whether it is alive.
 */
import type { WorkerRow } from '../store/types';
import { claimTtlMs, getStore } from './store';

/** A worker silent this long is shown as dead (it heartbeats every second by default). */
export const DEAD_AFTER_S = 10;

export interface WorkerView extends WorkerRow {
  heartbeatAge: number;
  state: 'alive' | 'silent' | 'stopped';
  runs: string[];
}

export async function getWorkers(): Promise<WorkerView[]> {
  const store = await getStore();
  const [workers, running] = await Promise.all([
    store.listWorkers(),
    store.listRuns({ status: 'running', limit: 1000, claimTtlMs: claimTtlMs() }),
  ]);
  const now = Date.now() / 1000;
  return workers.map((w) => ({
    ...w,
    heartbeatAge: now - w.heartbeatAt,
    state: w.stoppedAt !== null ? 'stopped' : now - w.heartbeatAt > DEAD_AFTER_S ? 'silent' : 'alive',
    runs: running.filter((r) => r.owner === w.id).map((r) => r.id),
  }));
}
