/**
 * What any text a store keeps must be, on top of its field's own rule: the one rule for fields that take text
 * freely (metadata values, reasons, webhook URLs and secrets, the names and ids a route looks up, claim tokens,
 * a cursor's strings, every string and field name of a run's input), for the API, the dashboard's forms, the CLI
 * and the library alike.
 *
 * - No NUL: PostgreSQL's text cannot hold one, and refuses the whole statement (22021), where SQLite keeps it;
 *   the same request would be a 500 on one backend and a success on the other.
 * - No unpaired surrogate: a string that is not valid UTF-16 has no UTF-8 form, so both stores keep U+FFFD in
 *   its place, and what is read back is not what was written (idempotency keys refuse it for the same reason,
 *   lib/checkpoint/keys.ts).
 *
 * Inside JSON both are written as escapes (`\u0000`, `\ud800`), which a text column keeps; but PostgreSQL's JSON
 * functions refuse the whole document then: a run's input holding one anywhere would fail every pick of its
 * workflow's workers (which read the limits' key from the input), on PostgreSQL alone.
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

/** Where a JSON value holds text no store can keep: the path of the string, or of the object whose field name it is. */
export interface JsonTextProblem {
  path: (string | number)[];
  message: string;
}

/** How many problems jsonTextProblems names at most: the first few say what to fix. */
const JSON_PROBLEMS_NAMED = 10;

/**
 * textProblem for every string and field name of a JSON value (as JSON.parse gives one, or a caller builds it), in
 * document order; empty when the value can be stored. A run's input needs it whole, not only the fields a rule
 * reads: PostgreSQL's JSON functions parse the whole text, and refuse a document holding `\u0000` or an unpaired
 * surrogate anywhere (22P05, 22P02). Walked with a stack, not recursion: a value may nest deeper than the stack.
 */
export function jsonTextProblems(value: unknown): JsonTextProblem[] {
  const problems: JsonTextProblem[] = [];
  // Each entry a value to walk, or a problem found in a field name, kept in place so the order is the document's.
  const stack: ({ value: unknown; path: (string | number)[] } | JsonTextProblem)[] = [{ value, path: [] }];
  while (stack.length > 0 && problems.length < JSON_PROBLEMS_NAMED) {
    const next = stack.pop()!;
    if ('message' in next) {
      problems.push(next);
      continue;
    }
    const { value: at, path } = next;
    if (typeof at === 'string') {
      const problem = textProblem(at);
      if (problem) problems.push({ path, message: problem });
    } else if (Array.isArray(at)) {
      for (let i = at.length - 1; i >= 0; i--) stack.push({ value: at[i], path: [...path, i] });
    } else if (at !== null && typeof at === 'object') {
      const fields = Object.entries(at);
      for (let i = fields.length - 1; i >= 0; i--) {
        const [name, field] = fields[i]!;
        const problem = textProblem(name);
        // Named by its parent and quoted as JSON: in the path, the error would carry the very character it refuses.
        if (problem) stack.push({ path, message: `field name ${JSON.stringify(name)} ${problem}` });
        else stack.push({ value: field, path: [...path, name] });
      }
    }
  }
  return problems;
}

/** jsonTextProblems as a zod refinement of a JSON value (`z.unknown().superRefine(storableJson)`), each at its path. */
export function storableJson(value: unknown, ctx: z.RefinementCtx<unknown>): void {
  for (const { path, message } of jsonTextProblems(value)) ctx.addIssue({ code: 'custom', message, path });
}
