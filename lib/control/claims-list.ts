/**
 * The one read of a page of claims, shared by the claims page (lib/data/claims.ts), GET /api/v1/claims
 * (lib/api/claims.ts) and `waybill claims`: oldest first, keyset-paged, so a sweep's worth of orphans never
 * comes back in one answer unless the caller asks for every one (the CLI's table).
 */
import type { ClaimRow, Store } from '../store/contract';

export interface ClaimsFilter {
  runId?: string;
  orphanedOnly?: boolean;
  /** Claims per page; none: every claim. */
  limit?: number;
  /** Keyset cursor: the last claim of the previous page. */
  after?: { claimedAt: number; idemKey: string };
}

export interface ClaimsPage {
  claims: ClaimRow[];
  /** The last claim of the page when there is a next one: the next page is read after it. */
  next: ClaimRow | null;
}

export async function readClaimsPage(
  store: Pick<Store, 'listClaims'>,
  filter: ClaimsFilter,
  claimTtlMs: number,
): Promise<ClaimsPage> {
  const { limit, ...rest } = filter;
  const rows = await store.listClaims({ ...rest, claimTtlMs, limit: limit === undefined ? undefined : limit + 1 });
  if (limit === undefined) return { claims: rows, next: null };
  const claims = rows.slice(0, limit);
  return { claims, next: rows.length > limit ? (claims.at(-1) ?? null) : null };
}
