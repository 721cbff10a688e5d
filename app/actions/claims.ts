'use server';
/**
 * Claim mutations for orphaned claims, whose side effect is in doubt: expire (the step runs again),
 * resolve (commit a result the operator supplies, marked manual), and sweep (expire every orphaned one).
 * Each checks the caller first (operator, same origin), before it parses anything or opens the store, and
 * writes the audit log once its change has taken effect.
 */
import { revalidatePath } from 'next/cache';
import { z } from 'zod';
import { MAX_DEPTH, nestingDepth } from '@/lib/json-depth';
import { requireAction } from '@/lib/auth/server';
import { config } from '@/lib/config';
import { audit } from '@/lib/data/audit';
import { claimTtlMs, getStore } from '@/lib/data/store';
import { ClaimNotOrphanedError, NotFoundError } from '@/lib/errors';
import { auditDetail, reasonSchema } from '@/lib/reason';
import { failure, fieldErrors, sizeError, type ActionResult } from './result';

const key = z.string().min(1, 'key is required').max(1024, 'key is too long');

function refresh(runId?: string) {
  revalidatePath('/claims');
  revalidatePath('/');
  revalidatePath('/audit');
  if (runId) revalidatePath(`/runs/${encodeURIComponent(runId)}`);
}

/** `reason` (optional, from the confirm dialog) is kept in the audit line. */
export async function expireClaimAction(input: { key: string; force?: boolean; reason?: string }): Promise<ActionResult> {
  const who = await requireAction('operator');
  const parsed = z.object({ key, force: z.boolean().optional(), reason: reasonSchema }).safeParse(input);
  if (!parsed.success) return { ok: false, message: 'invalid request', errors: fieldErrors(parsed.error) };
  try {
    const store = await getStore();
    const claim = await store.getClaim(parsed.data.key, { claimTtlMs: claimTtlMs() });
    const outcome = await store.expireClaim(parsed.data.key, { actor: who.actor, force: parsed.data.force, claimTtlMs: claimTtlMs() });
    if (outcome === 'expired') {
      await audit(who, {
        action: 'expire', target: parsed.data.key, runId: claim?.runId,
        detail: auditDetail({ note: parsed.data.force ? 'forced: the lease was live' : null, reason: parsed.data.reason }),
      });
    }
    refresh(claim?.runId);
    if (outcome === 'expired') return { ok: true, message: `expired ${parsed.data.key}: the step will run again` };
    return { ok: false, message: outcome === 'missing' ? 'there is no claim on that key any more' : 'its lease is live: the worker is still executing it' };
  } catch (error) {
    return failure(error);
  }
}

const resolveSchema = z.object({
  key,
  result: z.string().min(1, 'a result is required'),
  note: z.string().max(2000, 'at most 2,000 characters').optional(),
  // The attempt shown on the page: if a worker took the claim over since, the store refuses.
  attempt: z.coerce.number().int().min(1).optional(),
});

export async function resolveClaimAction(_previous: ActionResult | null, form: FormData): Promise<ActionResult> {
  const who = await requireAction('operator');
  const parsed = resolveSchema.safeParse({
    key: form.get('key') ?? '', result: form.get('result') ?? '', note: (form.get('note') as string | null) || undefined,
    attempt: form.get('attempt') || undefined,
  });
  if (!parsed.success) return { ok: false, message: 'check the form', errors: fieldErrors(parsed.error) };
  const tooLarge = sizeError('result', parsed.data.result, config().WAYBILL_MAX_BODY_BYTES);
  if (tooLarge) return { ok: false, message: 'the result is too large', errors: { result: [tooLarge] } };
  // The API's limit, for the same reason: a value nested deeper cannot be shown or answered safely.
  const depth = nestingDepth(parsed.data.result);
  if (depth > MAX_DEPTH) {
    return { ok: false, message: 'the result nests too deep', errors: { result: [`nests ${depth.toLocaleString('en-US')} levels deep: the limit is ${MAX_DEPTH}`] } };
  }
  try {
    JSON.parse(parsed.data.result);
  } catch (error) {
    return { ok: false, message: 'the result is not valid JSON', errors: { result: [`not valid JSON: ${(error as Error).message}`] } };
  }
  try {
    const store = await getStore();
    // The store decides whether the claim may be resolved, in the transaction that resolves it: a check read
    // here first could be overtaken by a worker taking the claim over.
    const { runId } = await store.resolveClaim({
      idemKey: parsed.data.key, resultJson: parsed.data.result, actor: who.actor, note: parsed.data.note,
      claimTtlMs: claimTtlMs(), attempt: parsed.data.attempt,
    });
    await audit(who, { action: 'resolve', target: parsed.data.key, runId, detail: parsed.data.note ?? null });
    refresh(runId);
    return { ok: true, message: `resolved ${parsed.data.key} by hand` };
  } catch (error) {
    if (error instanceof NotFoundError) return { ok: false, message: 'there is no claim on that key any more' };
    if (error instanceof ClaimNotOrphanedError) {
      refresh();
      return { ok: false, message: error.reason === 'live'
        ? 'its lease is live: resolve only claims whose side effect is in doubt'
        : 'a worker took the claim over since you saw it: nothing was committed, check the claim again' };
    }
    return failure(error);
  }
}

export async function sweepOrphanedAction(input: { confirm: boolean; reason?: string }): Promise<ActionResult<{ expired: number }>> {
  const who = await requireAction('operator');
  const parsed = z.object({ confirm: z.literal(true, { error: 'confirm the sweep' }), reason: reasonSchema }).safeParse(input);
  if (!parsed.success) return { ok: false, message: 'confirm the sweep first', errors: fieldErrors(parsed.error) };
  try {
    const store = await getStore();
    const expired: string[] = [];
    for (const claim of await store.listClaims({ orphanedOnly: true, claimTtlMs: claimTtlMs() })) {
      if ((await store.expireClaim(claim.idemKey, { actor: who.actor, claimTtlMs: claimTtlMs() })) === 'expired') expired.push(claim.idemKey);
    }
    // One line for the sweep; each expired claim is in its run's timeline already, with who did it.
    if (expired.length > 0) {
      const listed = expired.slice(0, 20).join(', ') + (expired.length > 20 ? `, and ${expired.length - 20} more` : '');
      await audit(who, {
        action: 'sweep', target: '*',
        detail: auditDetail({ note: `expired ${expired.length} orphaned claim(s): ${listed}`, reason: parsed.data.reason }),
      });
    }
    refresh();
    return { ok: true, message: `swept ${expired.length} orphaned claim(s): their steps will run again`, data: { expired: expired.length } };
  } catch (error) {
    return failure(error);
  }
}
