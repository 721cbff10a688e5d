/**
 * Decisions about claims whose side effect is in doubt: expire one (the step runs again), resolve one with
 * a result the operator supplies (committed as `manual`, it never runs), sweep every orphaned one. Each
 * authorizes, validates, lets the store decide in the transaction that changes the claim, and records one
 * audit line once it did; a refusal writes nothing.
 */
import { z } from 'zod';
import { ClaimNotOrphanedError, ControlInputError, LiveClaimError, NotFoundError } from '../errors';
import { record } from './audit';
import { authorize, type Caller, forceHint } from './caller';
import { validate } from './errors';
import { claimKey, note, reasonField, runRef } from './fields';
import type { ControlDeps } from './store';

const FORCED = 'forced: the lease was live';

const expireInput = z.strictObject({
  key: claimKey,
  force: z.boolean({ error: 'must be true or false' }).optional(),
  reason: reasonField,
});

/**
 * Expires one claim. NotFoundError when there is no claim on the key, LiveClaimError when its lease is live
 * and `force` is not set.
 */
export async function expire(
  deps: ControlDeps,
  caller: Caller,
  input: z.input<typeof expireInput>,
): Promise<{ key: string; runId: string | null }> {
  authorize(caller, 'operator');
  const given = validate(expireInput, input);
  const store = await deps.store();
  // Read first for the audit line (its run, whether it was live); the expiry itself decides in its transaction.
  const held = await store.getClaim(given.key, { claimTtlMs: deps.claimTtlMs });
  const outcome = await store.expireClaim(given.key, {
    actor: caller.actor,
    force: given.force,
    claimTtlMs: deps.claimTtlMs,
  });
  if (outcome === 'missing') throw new NotFoundError(`claim on ${given.key}`);
  if (outcome === 'live') throw new LiveClaimError(given.key, 'expire', forceHint(caller));
  const runId = held?.runId ?? null;
  await record(store, caller, {
    action: 'expire',
    target: given.key,
    runId,
    note: given.force && held && !held.orphaned ? FORCED : null,
    reason: given.reason,
  });
  return { key: given.key, runId };
}

const resolveInput = z.strictObject({
  key: claimKey,
  /** Any JSON value: what the side effect produced, as the operator found out. */
  result: z.unknown().refine((v) => v !== undefined, 'is required'),
  note: note(2000).optional(),
  force: z.boolean({ error: 'must be true or false' }).optional(),
  /** The attempt the operator saw: a claim a worker took over since is refused. */
  attempt: z
    .number({ error: 'must be a number' })
    .int('must be a whole number')
    .min(1, 'must be ≥ 1')
    .max(2_147_483_647, 'must be < 2^31')
    .optional(),
});

/**
 * Commits a result by hand. LiveClaimError for a live lease without `force`; ClaimNotOrphanedError
 * (`replaced`) for a claim taken over since the operator saw it; NotFoundError when there is no claim.
 */
export async function resolve(
  deps: ControlDeps,
  caller: Caller,
  input: z.input<typeof resolveInput>,
): Promise<{ key: string; runId: string }> {
  authorize(caller, 'operator');
  const given = validate(resolveInput, input);
  const resultJson = JSON.stringify(given.result);
  const bytes = Buffer.byteLength(resultJson, 'utf8');
  if (bytes > deps.maxBytes) {
    throw ControlInputError.of({
      result: [
        `is ${bytes.toLocaleString('en-US')} bytes: the limit is ${deps.maxBytes.toLocaleString('en-US')} bytes (WAYBILL_MAX_BODY_BYTES)`,
      ],
    });
  }
  const store = await deps.store();
  const held = given.force ? await store.getClaim(given.key, { claimTtlMs: deps.claimTtlMs }) : null;
  let runId: string;
  try {
    ({ runId } = await store.resolveClaim({
      idemKey: given.key,
      resultJson,
      actor: caller.actor,
      note: given.note,
      claimTtlMs: deps.claimTtlMs,
      force: given.force,
      attempt: given.attempt,
    }));
  } catch (error) {
    if (error instanceof ClaimNotOrphanedError && error.reason === 'live')
      throw new LiveClaimError(given.key, 'resolve', forceHint(caller));
    throw error;
  }
  await record(store, caller, {
    action: 'resolve',
    target: given.key,
    runId,
    note: [held && !held.orphaned ? FORCED : null, given.note || null].filter(Boolean).join('; ') || null,
  });
  return { key: given.key, runId };
}

const sweepInput = z.strictObject({
  runId: runRef.optional(),
  reason: reasonField,
});

export interface SweepReport {
  /** The keys expired, in the order they were listed (oldest claim first). */
  keys: string[];
  /** Orphaned when listed, but renewed or taken meanwhile (or gone): left alone. */
  skipped: { key: string; why: 'missing' | 'live' }[];
}

/**
 * Expires every claim orphaned when listed (of one run, when given). Not forced: a claim whose holder renewed
 * it meanwhile was not orphaned after all, and stays. One audit line for the sweep, when it expired any;
 * each expiry is in its run's timeline already, with who did it.
 */
export async function sweep(
  deps: ControlDeps,
  caller: Caller,
  input: z.input<typeof sweepInput>,
  options: { onProgress?: (done: number, total: number) => void } = {},
): Promise<SweepReport> {
  authorize(caller, 'operator');
  const given = validate(sweepInput, input);
  const store = await deps.store();
  const orphaned = await store.listClaims({ runId: given.runId, orphanedOnly: true, claimTtlMs: deps.claimTtlMs });
  const report: SweepReport = { keys: [], skipped: [] };
  for (const [i, claim] of orphaned.entries()) {
    const outcome = await store.expireClaim(claim.idemKey, { actor: caller.actor, claimTtlMs: deps.claimTtlMs });
    if (outcome === 'expired') report.keys.push(claim.idemKey);
    else report.skipped.push({ key: claim.idemKey, why: outcome });
    options.onProgress?.(i + 1, orphaned.length);
  }
  if (report.keys.length > 0) {
    const listed =
      report.keys.slice(0, 20).join(', ') + (report.keys.length > 20 ? `, and ${report.keys.length - 20} more` : '');
    await record(store, caller, {
      action: 'sweep',
      target: given.runId ?? '*',
      runId: given.runId ?? null,
      note: `expired ${report.keys.length} orphaned claim(s): ${listed}`,
      reason: given.reason,
    });
  }
  return report;
}
