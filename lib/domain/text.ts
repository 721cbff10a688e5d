/**
 * What any text a store keeps must be, on top of its field's own rule: the one rule for fields that take text
 * freely (metadata values, reasons, webhook URLs and secrets, the names and ids a route looks up, claim tokens,
 * a cursor's strings), for the API, the dashboard's forms and the CLI alike.
 *
 * - No NUL: PostgreSQL's text cannot hold one, and refuses the whole statement (22021), where SQLite keeps it;
 *   the same request would be a 500 on one backend and a success on the other.
 * - No unpaired surrogate: a string that is not valid UTF-16 has no UTF-8 form, so both stores keep U+FFFD in
 *   its place, and what is read back is not what was written (idempotency keys refuse it for the same reason,
 *   lib/checkpoint/keys.ts).
 */
import type { z } from 'zod';

/** Why `text` cannot be stored as it is, or undefined when it can. */
export function textProblem(text: string): string | undefined {
  if (text.includes('\u0000')) return 'must not contain NUL characters';
  if (/\p{Cs}/u.test(text))
    return 'must not contain an unpaired surrogate (it is not valid UTF-16, so it has no UTF-8 form to store)';
  return undefined;
}

/**
 * textProblem as a zod refinement: `z.string().max(…).superRefine(storableText)`. It stops the field's later
 * checks, so a URL with a NUL is told about the NUL, not also that it is no URL.
 */
export function storableText(text: string, ctx: z.RefinementCtx<string>): void {
  const problem = textProblem(text);
  if (problem) ctx.addIssue({ code: 'custom', message: problem, continue: false });
}
