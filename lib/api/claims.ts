/**
 * Claims over HTTP: the listing, and the bodies of expire, resolve and sweep, whose decisions lib/control/claims
 * makes. Keys travel in bodies, not paths: they hold ':' and '/' and are up to 512 characters.
 */
import { z } from 'zod';
import { readClaimsPage } from '../control/claims-list';
import { claimView } from '../control/views';
import type { Store } from '../store/contract';
import { decodeClaimsCursor, encodeClaimsCursor } from './cursor';
import { freeText, idemKey, requiredJson, runRef, stepNumber } from './ids';
import { queryBool, queryLimit } from './validate';

export const listClaimsQuery = z.strictObject({
  orphaned: queryBool.optional(),
  runId: runRef.optional(),
  limit: queryLimit(500).optional(),
  cursor: z.string().optional(),
});

const force = z.boolean({ error: 'must be true or false' }).optional();
/** The operator's reason, kept in the audit line; lib/control checks its text (reasonSchema). */
const reason = z.string({ error: 'must be text' }).optional();

export const expireBody = z.strictObject({ key: idemKey, force, reason });

export const resolveBody = z.strictObject({
  key: idemKey,
  result: requiredJson,
  note: freeText(2000).optional(),
  force,
  /** The attempt the caller listed: a claim taken over since is refused. */
  attempt: stepNumber.min(1, 'must be ≥ 1').optional(),
});

export const sweepBody = z.strictObject({ runId: runRef.optional(), reason }).optional();

/** A page of claims, oldest first, keyset-paged: a sweep's worth of orphans never comes back in one answer. */
export async function listClaims(store: Store, query: z.output<typeof listClaimsQuery>, claimTtlMs: number) {
  const { claims, next } = await readClaimsPage(
    store,
    {
      runId: query.runId,
      orphanedOnly: query.orphaned,
      limit: query.limit ?? 100,
      after: query.cursor === undefined ? undefined : decodeClaimsCursor(query.cursor),
    },
    claimTtlMs,
  );
  return {
    claims: claims.map((c) => claimView(c, claimTtlMs)),
    nextCursor: next ? encodeClaimsCursor(next) : null,
  };
}
