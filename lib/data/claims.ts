import 'server-only';
import { readClaimsPage } from '../control/claims-list';
import { isOutsideClaim } from '../control/views';
/**
 * The claims page: every claim with its lease, its worker's heartbeat, and whether its side effect is in doubt.
 */
import { claimExpiresAt } from '../domain/claim-expiry';
import { claimsCursor } from '../domain/cursor';
import { isLive } from '../domain/liveness';
import type { ClaimRow } from '../store/contract';
import { claimTtlMs, getStore, heartbeatMs } from './store';

export interface ClaimView extends ClaimRow {
  /** When the lease passes (or passed), epoch seconds: a claim without a lease column lives claim TTL. */
  expiresAt: number;
  /** Seconds since the holder's worker last heartbeat, or null when it is not a registered worker. */
  heartbeatAge: number | null;
  workerAlive: boolean | null;
  /** Written by an outside client straight into the store, as the API's outsideClient says. */
  outsideClient: boolean;
}

/** Claims per page: a store with thousands in flight is shown a page at a time, oldest first. */
export const CLAIMS_PAGE = 50;

export async function getClaims(options: { cursor?: string } = {}): Promise<{
  claims: ClaimView[];
  orphaned: number;
  total: number;
  now: number;
  next: string | null;
}> {
  const store = await getStore();
  const [page, counts] = await Promise.all([
    readClaimsPage(store, { limit: CLAIMS_PAGE, after: decodeCursor(options.cursor) }, claimTtlMs()),
    store.countClaims({ claimTtlMs: claimTtlMs() }),
  ]);
  const { claims } = page;
  // The holders of this page's claims only: a page of 50 reads at most 50 workers, however large the fleet.
  const holders = [...new Set(claims.flatMap((c) => (c.workerId ? [c.workerId] : [])))];
  const workers = holders.length === 0 ? [] : await store.listWorkers({ ids: holders });
  const next = page.next ? claimsCursor.encode(page.next) : null;
  const now = Date.now() / 1000;
  const byId = new Map(workers.map((w) => [w.id, w]));
  const views = claims.map((c): ClaimView => {
    const worker = c.workerId ? byId.get(c.workerId) : undefined;
    return {
      ...c,
      expiresAt: claimExpiresAt(c, claimTtlMs()),
      heartbeatAge: worker ? now - worker.heartbeatAt : null,
      workerAlive: worker ? isLive(worker, now, heartbeatMs()) : null,
      outsideClient: isOutsideClaim(c),
    };
  });
  // Doubtful ones first on each page: they are what an operator came for.
  views.sort((a, b) => Number(b.orphaned) - Number(a.orphaned) || a.claimedAt - b.claimedAt);
  return { claims: views, orphaned: counts.orphaned, total: counts.total, now, next };
}

/** A cursor that does not decode is treated as none: it came from a URL anyone can edit. */
const decodeCursor = (raw: string | undefined) => (raw ? (claimsCursor.decode(raw) ?? undefined) : undefined);
