import 'server-only';
/**
 * The claims page: every claim with its lease, its worker's heartbeat, and whether its side effect is in doubt.
 */
import type { ClaimRow } from '../store/types';
import { claimTtlMs, getStore } from './store';

export interface ClaimView extends ClaimRow {
  /** When the lease passes (or passed), epoch seconds: a claim without a lease column lives claim TTL. */
  expiresAt: number;
  /** Seconds since the holder's worker last heartbeat, or null when it is not a registered worker. */
  heartbeatAge: number | null;
  workerAlive: boolean | null;
}

export async function getClaims(): Promise<{ claims: ClaimView[]; orphaned: number; now: number }> {
  const store = await getStore();
  const [claims, workers] = await Promise.all([store.listClaims({ claimTtlMs: claimTtlMs() }), store.listWorkers()]);
  const now = Date.now() / 1000;
  const byId = new Map(workers.map((w) => [w.id, w]));
  const views = claims.map((c): ClaimView => {
    const worker = c.workerId ? byId.get(c.workerId) : undefined;
    return {
      ...c,
      expiresAt: c.leaseExpiresAt ?? c.claimedAt + claimTtlMs() / 1000,
      heartbeatAge: worker ? now - worker.heartbeatAt : null,
      workerAlive: worker ? worker.stoppedAt === null && now - worker.heartbeatAt < 10 : null,
    };
  });
  // Doubtful ones first: they are what an operator came for.
  views.sort((a, b) => Number(b.orphaned) - Number(a.orphaned) || a.claimedAt - b.claimedAt);
  return { claims: views, orphaned: views.filter((c) => c.orphaned).length, now };
}
