import 'server-only';
/**
 * The control plane's one store per server process, opened from the configuration and kept on globalThis
 * so that development reloads do not open a connection each time. Pages never migrate it (a read never
 * writes): the server process does, once, as it starts (migrateAtStart, from instrumentation.ts; a process that
 * never ran that hook, such as a test serving the route handlers, runs it before its first open), unless
 * WAYBILL_MIGRATE=off. A store that is missing or behind is then refused with the fix.
 */
import { config, dataDir, storeOptions } from '../config';
import type { ControlStore } from '../control/store';
import { liveWithinMs } from '../domain/liveness';
import { WorkflowCatalog } from '../engine/catalog';
import type { WorkflowRegistry } from '../engine/workflow';
import { openStore } from '../store/index';
import { guardStore, isUnreachable, markDown } from './store-guard';
import { registerStoreProbe } from './store-health';

export type { ControlStore };

const cache = globalThis as {
  waybillStore?: Promise<ControlStore>;
  waybillRegistry?: Promise<WorkflowRegistry>;
  waybillMigrated?: Promise<void>;
};

export function getStore(): Promise<ControlStore> {
  if (!cache.waybillStore) {
    // Guarded: an unreachable store is one StoreUnavailableError (503 from the API, the error page's own
    // state on pages), and its state is known to the proxy (store-health.ts).
    const opening = migrateAtStart()
      .then(() => openStore(config().DATABASE_URL, { ...storeOptions(config()), migrate: false }))
      .then(
        (store) => guardStore(store),
        (error: unknown) => {
          throw isUnreachable(error) ? markDown(error) : error;
        },
      );
    // A store that failed to open (database down at the first request) is not kept: the next request tries again.
    opening.catch(() => {
      if (cache.waybillStore === opening) cache.waybillStore = undefined;
    });
    cache.waybillStore = opening;
  }
  return cache.waybillStore;
}

/**
 * The dashboard's server creates or upgrades the store as it starts, as workers do (WAYBILL_MIGRATE=on), once
 * per process. A failure is not kept: the first open of the store (getStore) tries again, and its error is
 * the one the pages and the API report (an unreachable store is a 503 there, not a dead server).
 */
export function migrateAtStart(): Promise<void> {
  if (!cache.waybillMigrated) {
    const migrating = (async () => {
      const options = storeOptions(config());
      if (options.migrate) await (await openStore(config().DATABASE_URL, options)).close();
    })();
    migrating.catch(() => {
      if (cache.waybillMigrated === migrating) cache.waybillMigrated = undefined;
    });
    cache.waybillMigrated = migrating;
  }
  return cache.waybillMigrated;
}

// The proxy's way to look at a store it was told is down: a primary-key read, which opens the store if needed.
registerStoreProbe(async () => (await getStore()).loadProgress('waybill-health-probe'));

/** The built-in workflows, whose code ships with the control plane (see lib/engine/catalog.ts). */
export function getBuiltins(): Promise<WorkflowRegistry> {
  cache.waybillRegistry ??= import('../engine/workflows/index').then((w) =>
    w.builtinRegistry({ model: w.modelFromEnv(config()), dataDir: dataDir(config()) }),
  );
  return cache.waybillRegistry;
}

/**
 * What runs may be started of: the built-ins and every workflow a worker published, with who serves each.
 * Read at each call, not cached: a worker started a second ago must be startable now.
 */
export async function getCatalog(): Promise<WorkflowCatalog> {
  const [store, builtins] = await Promise.all([getStore(), getBuiltins()]);
  return WorkflowCatalog.load(store, builtins, liveWithinMs(heartbeatMs()));
}

/** The claim TTL the pages judge outside clients' claims by. */
export const claimTtlMs = (): number => config().WAYBILL_CLAIM_TTL_MS;
export const heartbeatMs = (): number => config().WAYBILL_HEARTBEAT_MS;
