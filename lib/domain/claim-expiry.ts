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
