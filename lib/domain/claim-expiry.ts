/**
 * When a claim stops protecting its key: at its lease's end, or — for an outside client's claim, which has no
 * lease column — its claim time plus the claim TTL (WAYBILL_CLAIM_TTL_MS). An expired claim is orphaned: any
 * claimer may take it over, and an operator may expire it. The store's SQL says the same in
 * lib/store/shared/claim-expiry-sql.ts; the PostgreSQL functions in drizzle/pg say it in PL/pgSQL.
 */

export interface Expiring {
  /** Epoch seconds, or null for a claim with no lease. */
  leaseExpiresAt: number | null;
  /** Epoch seconds. */
  claimedAt: number;
}

/** The epoch second at which `claim` expires. */
export function claimExpiresAt(claim: Expiring, claimTtlMs: number): number {
  return claim.leaseExpiresAt ?? claim.claimedAt + claimTtlMs / 1000;
}

/** Whether `claim` has expired at `nowS` (epoch seconds): expiry is inclusive, a lease ends at its second. */
export function claimExpired(claim: Expiring, claimTtlMs: number, nowS: number): boolean {
  return claimExpiresAt(claim, claimTtlMs) <= nowS;
}

/**
 * What the `expired` event of a dead worker's claim says after `worker <id> died (<reason>); ` (markWorkerDead,
 * both backends): the claim expires then, so the step's next claim takes it over and is told it is in doubt.
 */
export const DIED_CLAIM_DETAIL = 'its claim expired: the step runs again, told it is in doubt';

/**
 * Whether `event` is markWorkerDead's `expired` event of `claim` (its key, holder and attempt): such a claim is
 * orphaned because its holder was declared dead, not because its lease passed. The store's SQL form, read on a
 * takeover, is lib/store/shared/claim-expiry-sql.ts expiredByDeathText.
 */
export function expiredByDeath(
  event: {
    outcome: string;
    idemKey: string | null;
    workerId: string | null;
    attempt: number | null;
    detail: string | null;
  },
  claim: { idemKey: string; workerId: string | null; attempt: number },
): boolean {
  return (
    event.outcome === 'expired' &&
    claim.workerId !== null &&
    event.idemKey === claim.idemKey &&
    event.workerId === claim.workerId &&
    event.attempt === claim.attempt &&
    (event.detail ?? '').endsWith(DIED_CLAIM_DETAIL)
  );
}
