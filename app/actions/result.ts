/**
 * What every server action returns: field errors instead of throwing, so forms show them inline.
 */
import { forbidden } from 'next/navigation';
import type { z } from 'zod';
import { requireAction } from '@/lib/auth/server';
import { config } from '@/lib/config';
import { authorize, type Caller } from '@/lib/control';
import { callerOf } from '@/lib/data/control';
import { errorFields, serverLog } from '@/lib/data/log';
import { isUnreachable } from '@/lib/data/store-guard';
import { jsonProblemText, parseJsonInput } from '@/lib/domain/json-input';
import { ControlInputError, ForbiddenError, WaybillError } from '@/lib/errors';

export type ActionResult<T = undefined> =
  | { ok: true; message: string; data?: T }
  | { ok: false; message: string; errors?: Record<string, string[]> };

/** zod issues as { field: [messages] }, the path joined with dots ('' for the whole input). */
export function fieldErrors(error: z.ZodError): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const issue of error.issues) (out[issue.path.join('.')] ??= []).push(issue.message);
  return out;
}

/**
 * The caller of an operator action, refused before anything is parsed or opened: no session is a 401, and
 * a viewer a 403, by lib/control's one rule (which the operation applies again itself).
 */
export async function operatorCaller(): Promise<Caller> {
  const caller = callerOf(await requireAction('viewer'), 'dashboard');
  try {
    authorize(caller, 'operator');
  } catch (error) {
    if (error instanceof ForbiddenError) forbidden();
    throw error;
  }
  return caller;
}

/** A thrown error as a result: our own errors say what happened, wrong fields beside their form fields. */
export function failure(error: unknown): { ok: false; message: string; errors?: Record<string, string[]> } {
  if (error instanceof ForbiddenError) forbidden();
  if (error instanceof ControlInputError) return { ok: false, message: error.message, errors: error.fields };
  if (isUnreachable(error)) {
    serverLog().warn('server action: store unavailable', errorFields(error));
    return {
      ok: false,
      message:
        'the store is unreachable right now: the action may not have been applied; reload to see, and try again shortly',
    };
  }
  if (error instanceof WaybillError) return { ok: false, message: error.message };
  serverLog().error('server action failed', errorFields(error));
  return { ok: false, message: 'internal error: the action did not complete (see the server log)' };
}

/**
 * A form field's JSON text held to the rule for operator JSON (lib/domain/json-input: size, nesting, parse),
 * or the form's answer naming what is wrong with it. `empty`: the value of a blank field.
 */
export function jsonField(
  field: string,
  text: string,
  empty: unknown,
): { ok: true; value: unknown } | { ok: false; result: ActionResult<never> } {
  if (!text.trim()) return { ok: true, value: empty };
  const parsed = parseJsonInput(text, { maxBytes: config().WAYBILL_MAX_BODY_BYTES });
  if (parsed.ok) return parsed;
  const why = { too_large: 'is too large', too_deep: 'nests too deep', not_json: 'is not valid JSON' }[
    parsed.problem.kind
  ];
  return {
    ok: false,
    result: { ok: false, message: `the ${field} ${why}`, errors: { [field]: [jsonProblemText(parsed.problem)] } },
  };
}
