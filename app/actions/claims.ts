'use server';
/**
 * Claim mutations for orphaned claims, whose side effect is in doubt: expire (the step runs again),
 * resolve (commit a result the operator supplies, marked manual), and sweep (expire every orphaned one).
 * Thin: each checks the caller first, reads its input, calls lib/control (which decides, validates, and
 * writes the audit line once the change took effect) and words the outcome for the page.
 */
import { revalidatePath } from 'next/cache';
import { z } from 'zod';
import { claims } from '@/lib/control';
import { controlDeps } from '@/lib/data/control';
import { ClaimNotOrphanedError, LiveClaimError, NotFoundError } from '@/lib/errors';
import { type ActionResult, failure, fieldErrors, jsonField, operatorCaller } from './result';

function refresh(runId?: string | null) {
  revalidatePath('/claims');
  revalidatePath('/');
  revalidatePath('/audit');
  if (runId) revalidatePath(`/runs/${encodeURIComponent(runId)}`);
}

const NO_CLAIM = 'there is no claim on that key any more';

/** `reason` (optional, from the confirm dialog) is kept in the audit line. */
export async function expireClaimAction(input: {
  key: string;
  force?: boolean;
  reason?: string;
}): Promise<ActionResult> {
  const caller = await operatorCaller();
  try {
    const { key, runId } = await claims.expire(controlDeps(), caller, {
      key: input.key,
      force: input.force,
      reason: input.reason,
    });
    refresh(runId);
    return { ok: true, message: `expired ${key}: the step will run again` };
  } catch (error) {
    if (error instanceof NotFoundError) return { ok: false, message: NO_CLAIM };
    if (error instanceof LiveClaimError)
      return { ok: false, message: 'its lease is live: the worker is still executing it' };
    const failed = failure(error);
    return failed.errors ? { ...failed, message: 'invalid request' } : failed;
  }
}

const resolveForm = z.object({
  key: z.string(),
  result: z.string().min(1, 'a result is required'),
  note: z.string().optional(),
  // The attempt shown on the page: if a worker took the claim over since, the store refuses.
  attempt: z.coerce.number().int().min(1).optional(),
});

export async function resolveClaimAction(_previous: ActionResult | null, form: FormData): Promise<ActionResult> {
  const caller = await operatorCaller();
  const parsed = resolveForm.safeParse({
    key: form.get('key') ?? '',
    result: form.get('result') ?? '',
    note: (form.get('note') as string | null) || undefined,
    attempt: form.get('attempt') || undefined,
  });
  if (!parsed.success) return { ok: false, message: 'check the form', errors: fieldErrors(parsed.error) };
  const json = jsonField('result', parsed.data.result, undefined);
  if (!json.ok) return json.result;
  const result = json.value;
  try {
    // The store decides whether the claim may be resolved, in the transaction that resolves it: a check read
    // here first could be overtaken by a worker taking the claim over.
    const { key, runId } = await claims.resolve(controlDeps(), caller, {
      key: parsed.data.key,
      result,
      note: parsed.data.note,
      attempt: parsed.data.attempt,
    });
    refresh(runId);
    return { ok: true, message: `resolved ${key} by hand` };
  } catch (error) {
    if (error instanceof NotFoundError) return { ok: false, message: NO_CLAIM };
    if (error instanceof LiveClaimError)
      return { ok: false, message: 'its lease is live: resolve only claims whose side effect is in doubt' };
    if (error instanceof ClaimNotOrphanedError) {
      refresh();
      return {
        ok: false,
        message: 'a worker took the claim over since you saw it: nothing was committed, check the claim again',
      };
    }
    const failed = failure(error);
    return failed.errors ? { ...failed, message: 'check the form' } : failed;
  }
}

export async function sweepOrphanedAction(input: {
  confirm: boolean;
  reason?: string;
}): Promise<ActionResult<{ expired: number }>> {
  const caller = await operatorCaller();
  // The dialog's own confirmation; the API and the CLI have theirs (a POST, a command typed).
  const confirmed = z.object({ confirm: z.literal(true, { error: 'confirm the sweep' }) }).safeParse(input);
  if (!confirmed.success)
    return { ok: false, message: 'confirm the sweep first', errors: fieldErrors(confirmed.error) };
  try {
    const report = await claims.sweep(controlDeps(), caller, { reason: input.reason });
    refresh();
    return {
      ok: true,
      message: `swept ${report.keys.length} orphaned claim(s): their steps will run again`,
      data: { expired: report.keys.length },
    };
  } catch (error) {
    const failed = failure(error);
    return failed.errors ? { ...failed, message: 'invalid request' } : failed;
  }
}
