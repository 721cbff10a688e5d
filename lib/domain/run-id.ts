/**
 * The two run-id rules every layer shares: the dashboard, the API, the CLI and the engine import them from here.
 *
 * - Looking a run up (any command, route, page or protocol call that names a run): outside clients choose their
 *   own ids and write them straight into the store, so this is the looser rule — up to 512 characters the store
 *   holds as text, with no spaces or control characters (NUL among them, which PostgreSQL's text cannot hold).
 * - Creating a run (`start`, rerun, fork): a short, plain id that every page, URL and shell takes as it is.
 */
import { z } from 'zod';

export const RUN_ID_LOOKUP_MAX = 512;
export const NEW_RUN_ID_MAX = 128;

/** What names an existing run: 1–512 characters, no spaces or control characters. */
export const runIdLookup = z
  .string({ error: 'must be a string' })
  .min(1, 'must not be empty')
  .max(RUN_ID_LOOKUP_MAX, `must be at most ${RUN_ID_LOOKUP_MAX} characters`)
  .regex(/^[^\s\p{Cc}]*$/u, 'must not contain spaces or control characters');

/** What a new run may be called: 1–128 of [A-Za-z0-9._:-], starting with a letter or digit. */
export const newRunId = z
  .string()
  .min(1)
  .max(NEW_RUN_ID_MAX)
  .regex(/^[A-Za-z0-9][A-Za-z0-9._:-]*$/, 'letters, digits and . _ : - only, starting with a letter or digit');

/** Why `id` cannot name a run, or undefined when it can. */
export function runIdLookupProblem(id: unknown): string | undefined {
  const checked = runIdLookup.safeParse(id);
  return checked.success ? undefined : checked.error.issues[0]?.message;
}

/** Why `id` cannot be a new run's id, or undefined when it can. */
export function newRunIdProblem(id: unknown): string | undefined {
  const checked = newRunId.safeParse(id);
  return checked.success ? undefined : checked.error.issues[0]?.message;
}
