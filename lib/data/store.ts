import 'server-only';
/**
 * The control plane's one store per server process, opened from the configuration and kept on globalThis
 * so that development reloads do not open a connection each time.
 */
import { config, dataDir } from '../config';
import type { WorkflowRegistry } from '../engine/workflow';
import { openStore } from '../store/index';
import type { AuditStore, InsightStore, RunStore, Store } from '../store/types';

export type ControlStore = Store & RunStore & InsightStore & AuditStore;

const cache = globalThis as { waybillStore?: Promise<ControlStore>; waybillRegistry?: Promise<WorkflowRegistry> };

export function getStore(): Promise<ControlStore> {
  if (!cache.waybillStore) {
    const opening = openStore(config().DATABASE_URL, { synchronous: config().WAYBILL_SQLITE_SYNC }) as Promise<ControlStore>;
    // A store that failed to open (database down at the first request) is not kept: the next request tries again.
    opening.catch(() => {
      if (cache.waybillStore === opening) cache.waybillStore = undefined;
    });
    cache.waybillStore = opening;
  }
  return cache.waybillStore;
}

export function getRegistry(): Promise<WorkflowRegistry> {
  cache.waybillRegistry ??= import('../engine/workflows/index').then((w) => w.builtinRegistry({ model: w.modelFromEnv(config()), dataDir: dataDir(config()) }));
  return cache.waybillRegistry;
}

/** The claim TTL the pages judge outside clients' claims by. */
export const claimTtlMs = (): number => config().WAYBILL_CLAIM_TTL_MS;
