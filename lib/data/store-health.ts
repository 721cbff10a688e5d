/**
 * Whether the control plane's store is reachable, as this server process last found it (store-guard.ts marks
 * it), and a way to look again. The proxy reads it to answer page requests with a 503 while the store is down,
 * instead of rendering pages that can only fail (each failure a render error Next logs at length).
 *
 * No imports, and state on globalThis: the proxy is a bundle of its own in the same process as the pages, and
 * must not pull the store's drivers in. The page side registers the probe when it opens the store.
 */

interface Health {
  downSince: number | null;
  lastError: string | null;
  probe: (() => Promise<unknown>) | null;
  probing: boolean;
  probedAt: number;
}

const shared = globalThis as { waybillStoreHealth?: Health };
const health = (): Health =>
  (shared.waybillStoreHealth ??= { downSince: null, lastError: null, probe: null, probing: false, probedAt: 0 });

/** How often a down store is looked at again, at most. */
const PROBE_EVERY_MS = 1000;

export function storeDownSince(): number | null {
  return health().downSince;
}

export function markStoreUp(): void {
  const h = health();
  h.downSince = null;
  h.lastError = null;
}

export function markStoreDown(message: string, now = Date.now()): void {
  const h = health();
  h.downSince ??= now;
  h.lastError = message;
}

/** One cheap read against the store, registered by the side that holds it. */
export function registerStoreProbe(probe: () => Promise<unknown>): void {
  health().probe = probe;
}

/** Looks at a down store again in the background, at most once a second; its outcome marks the store. */
export function probeStore(now = Date.now()): void {
  const h = health();
  if (!h.probe || h.probing || now - h.probedAt < PROBE_EVERY_MS) return;
  h.probing = true;
  h.probedAt = now;
  h.probe()
    .catch(() => undefined)
    .finally(() => {
      h.probing = false;
    });
}
