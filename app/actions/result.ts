/**
 * What every server action returns: field errors instead of throwing, so forms show them inline.
 */
import { z } from 'zod';
import { errorFields, serverLog } from '@/lib/data/log';
import { isUnreachable } from '@/lib/data/store-guard';
import { WaybillError } from '@/lib/errors';

export type ActionResult<T = undefined> =
  | { ok: true; message: string; data?: T }
  | { ok: false; message: string; errors?: Record<string, string[]> };

/** zod issues as { field: [messages] }, the path joined with dots ('' for the whole input). */
export function fieldErrors(error: z.ZodError): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const issue of error.issues) (out[issue.path.join('.')] ??= []).push(issue.message);
  return out;
}

/** A thrown error as a result: our own errors say what happened; anything else is not shown to the client. */
export function failure(error: unknown): { ok: false; message: string } {
  if (isUnreachable(error)) {
    serverLog().warn('server action: store unavailable', errorFields(error));
    return { ok: false, message: 'the store is unreachable right now: the action may not have been applied; reload to see, and try again shortly' };
  }
  if (error instanceof WaybillError) return { ok: false, message: error.message };
  serverLog().error('server action failed', errorFields(error));
  return { ok: false, message: 'internal error: the action did not complete (see the server log)' };
}

/**
 * The field error for a value over WAYBILL_MAX_BODY_BYTES, or null. Measured in UTF-8 bytes, as stored; the
 * message names the limit and the variable that sets it.
 */
export function sizeError(what: string, text: string, maxBytes: number): string | null {
  const bytes = Buffer.byteLength(text, 'utf8');
  if (bytes <= maxBytes) return null;
  return `the ${what} is ${bytes.toLocaleString('en-US')} bytes: the limit is ${maxBytes.toLocaleString('en-US')} bytes (WAYBILL_MAX_BODY_BYTES)`;
}
