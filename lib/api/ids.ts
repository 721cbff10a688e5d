/**
 * What the API accepts as a run id, an idempotency key and free text, defined once for every route.
 *
 * Run ids follow the two rules of lib/domain/run-id, the same as the dashboard's and the CLI's: a run started
 * through the API gets a new id (`newRunId`); a route or protocol call naming a run takes the lookup rule
 * (`runRef`), looser because outside clients choose their own ids.
 */
import { z } from 'zod';
import { KEY_MAX, keyProblem } from '../checkpoint/keys';
import { newRunId, runIdLookup } from '../domain/run-id';
import { storableText } from '../domain/text';

export { newRunId, runIdLookup as runRef };

/** "is required" when the field is missing, "must be …" when it has the wrong type. */
export const typeError = (what: string) => (issue: { input: unknown }) =>
  issue.input === undefined ? 'is required' : `must be ${what}`;

export const WORKER_ID_MAX = 128;
export { KEY_MAX };

/** An idempotency key: the rule Checkpoint.runOnce applies too (keyProblem in lib/checkpoint/keys). */
export const idemKey = z.string({ error: 'must be a string' }).superRefine((key, ctx) => {
  const problem = keyProblem(key);
  if (problem) ctx.addIssue({ code: 'custom', message: problem });
});

/** A worker's or client's name, shown on the claims page. */
export const workerId = z
  .string({ error: 'must be a string' })
  .min(1, 'must not be empty')
  .max(WORKER_ID_MAX, `must be at most ${WORKER_ID_MAX} characters`)
  .regex(/^[^\p{C}\s]*$/u, 'must not contain spaces, control or invisible characters');

/** Notes and error messages: any text a store can keep (lib/domain/text.ts), bounded. */
export const freeText = (max: number) =>
  z.string({ error: 'must be a string' }).max(max, `must be at most ${max} characters`).superRefine(storableText);

/**
 * A field that takes any JSON value and must be given (null included). zod's own word for a missing one is
 * "expected nonoptional, received undefined"; this says "is required", under the field's name.
 */
export const requiredJson = z.unknown().refine((value) => value !== undefined, 'is required');

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
