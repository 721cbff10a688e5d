/**
 * Claims for operators: list them, and decide about a claim whose side effect is in doubt — expire it (the
 * step runs again), resolve it with a result supplied by hand (it never runs), or sweep every orphaned one.
 * Keys travel in bodies, not paths: they hold ':' and '/' and are up to 512 characters.
 */
import { z } from 'zod';
import { ClaimNotOrphanedError, NotFoundError, WaybillError } from '../errors';
import type { Store } from '../store/types';
import { freeText, idemKey, runRef, stepNumber } from './ids';
import { decodeClaimsCursor, encodeClaimsCursor } from './cursor';
import { queryBool, queryLimit } from './validate';
import { claimView } from './views';

export const listClaimsQuery = z.strictObject({
  orphaned: queryBool.optional(), runId: runRef.optional(), limit: queryLimit(500).optional(), cursor: z.string().optional(),
});

const force = z.boolean({ error: 'must be true or false' }).optional();

export const expireBody = z.strictObject({ key: idemKey, force });

export const resolveBody = z.strictObject({
  key: idemKey,
  result: z.unknown().refine((v) => v !== undefined, 'is required'),
  note: freeText(2000).optional(),
  force,
  /** The attempt the caller listed: a claim taken over since is refused. */
  attempt: stepNumber.min(1, 'must be ≥ 1').optional(),
});

export const sweepBody = z.strictObject({ runId: runRef.optional() }).optional();

/** A claim whose lease is live: its worker may be executing it right now. */
export class LiveClaimError extends WaybillError {
  constructor(key: string, verb: string) {
    super('CONFLICT', `the claim on ${key} has a live lease (its holder may be executing it): ${verb} only claims whose side effect is in doubt, or send "force": true`);
  }
}

/** A page of claims, oldest first, keyset-paged: a sweep's worth of orphans never comes back in one answer. */
export async function listClaims(store: Store, query: z.output<typeof listClaimsQuery>, claimTtlMs: number) {
  const limit = query.limit ?? 100;
  const rows = await store.listClaims({
    runId: query.runId, orphanedOnly: query.orphaned, claimTtlMs, limit: limit + 1,
    after: query.cursor === undefined ? undefined : decodeClaimsCursor(query.cursor),
  });
  const page = rows.slice(0, limit);
  const last = page.at(-1);
  return { claims: page.map((c) => claimView(c, claimTtlMs)), nextCursor: rows.length > limit && last ? encodeClaimsCursor(last) : null };
}

/** Expires one claim; returns the run it belonged to, for the audit line. */
export async function expire(store: Store, body: z.output<typeof expireBody>, actor: string, claimTtlMs: number) {
  const held = await store.getClaim(body.key, { claimTtlMs });
  const outcome = await store.expireClaim(body.key, { actor, force: body.force, claimTtlMs });
  if (outcome === 'missing') throw new NotFoundError(`claim on ${body.key}`);
  if (outcome === 'live') throw new LiveClaimError(body.key, 'expire');
  return { key: body.key, runId: held?.runId ?? null, expired: true };
}

/** Resolves one claim; returns the run it belonged to, for the audit line. The store decides whether it may. */
export async function resolve(store: Store, body: z.output<typeof resolveBody>, actor: string, claimTtlMs: number) {
  try {
    const { runId } = await store.resolveClaim({
      idemKey: body.key, resultJson: JSON.stringify(body.result), actor, note: body.note, claimTtlMs, force: body.force, attempt: body.attempt,
    });
    return { key: body.key, runId, resolved: true };
  } catch (error) {
    // The same answer expire gives a live claim, with its hint about force.
    if (error instanceof ClaimNotOrphanedError && error.reason === 'live') throw new LiveClaimError(body.key, 'resolve');
    throw error;
  }
}

/** Expires every orphaned claim (of one run, when given); a claim renewed meanwhile is left alone. */
export async function sweep(store: Store, body: z.output<typeof sweepBody>, actor: string, claimTtlMs: number) {
  const keys: string[] = [];
  for (const claim of await store.listClaims({ runId: body?.runId, orphanedOnly: true, claimTtlMs })) {
    if ((await store.expireClaim(claim.idemKey, { actor, claimTtlMs })) === 'expired') keys.push(claim.idemKey);
  }
  return { expired: keys.length, keys };
}
