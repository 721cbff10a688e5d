/**
 * What the API accepts as a run id, an idempotency key and free text, defined once for every route.
 *
 * A run started through the API gets an id from `runIdSchema` (lib/engine/runs), the same rule as the
 * dashboard and the CLI. Runs written by outside clients over the checkpoint protocol choose their own ids, so
 * the rule for ids we look up or accept from the protocol is a little wider (`@` and `/` too, as agents
 * name runs after users and paths) — but still ASCII, bounded, and free of anything a URL, a log line or
 * PostgreSQL's text type would choke on.
 */
import { z } from 'zod';
import { KEY_MAX, keyProblem } from '../checkpoint/keys';
import { runIdSchema } from '../engine/runs';

export { runIdSchema as newRunId };

/** "is required" when the field is missing, "must be …" when it has the wrong type. */
export const typeError = (what: string) => (issue: { input: unknown }) =>
  issue.input === undefined ? 'is required' : `must be ${what}`;

export const RUN_ID_MAX = 128;
export { KEY_MAX };

/** A run id to look up or to write progress under: ≤ 128 of [A-Za-z0-9._:@/-], starting with a letter or digit. */
export const runRef = z
  .string({ error: 'must be a string' })
  .min(1, 'must not be empty')
  .max(RUN_ID_MAX, `must be at most ${RUN_ID_MAX} characters`)
  .regex(
    /^(?:[A-Za-z0-9][A-Za-z0-9._:@/-]*)?$/,
    'letters, digits and . _ : @ / - only, starting with a letter or digit',
  );

/** An idempotency key: the rule Checkpoint.runOnce applies too (keyProblem in lib/checkpoint/keys). */
export const idemKey = z.string({ error: 'must be a string' }).superRefine((key, ctx) => {
  const problem = keyProblem(key);
  if (problem) ctx.addIssue({ code: 'custom', message: problem });
});

/** A worker's or client's name, shown on the claims page. */
export const workerId = z
  .string({ error: 'must be a string' })
  .min(1, 'must not be empty')
  .max(RUN_ID_MAX, `must be at most ${RUN_ID_MAX} characters`)
  .regex(/^[^\p{C}\s]*$/u, 'must not contain spaces, control or invisible characters');

/** Notes and error messages: any text but NUL (PostgreSQL's text cannot hold it), bounded. */
export const freeText = (max: number) =>
  z
    .string({ error: 'must be a string' })
    .max(max, `must be at most ${max} characters`)
    .refine((s) => !s.includes('\u0000'), 'must not contain NUL characters');

/** A fingerprint of a step's input (a digest): short and printable. */
export const fingerprint = z
  .string({ error: 'must be a string' })
  .min(1, 'must not be empty')
  .max(256, 'must be at most 256 characters')
  .regex(/^[\x21-\x7e]+$/, 'must be printable ASCII without spaces');

/** Step numbers and counters fit PostgreSQL's integer column. */
export const stepNumber = z
  .number({ error: typeError('a number') })
  .int('must be a whole number')
  .min(0, 'must be ≥ 0')
  .max(2_147_483_647, 'must be < 2^31');
