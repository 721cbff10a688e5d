/**
 * What every server action returns: field errors instead of throwing, so forms show them inline.
 */
import { z } from 'zod';
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
  if (error instanceof WaybillError) return { ok: false, message: error.message };
  console.error('server action failed', error);
  return { ok: false, message: 'internal error: the action did not complete (see the server log)' };
}

/** Who an action is recorded as. Tokens and roles replace this with the signed-in operator. */
export async function actor(): Promise<string> {
  return 'dashboard';
}
