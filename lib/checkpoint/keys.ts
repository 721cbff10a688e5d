/**
 * Idempotency keys come from what is processed, never from time or attempt: a key that changes across
 * resumes voids the protocol (the article's second operational lesson).
 */
import * as crypto from 'node:crypto';
import { canonicalJson } from '../domain/canonical-json';
import { InvalidInputError } from '../errors';

export { canonicalJson };

/** The longest idempotency key, in UTF-16 code units (what a JS string's length counts). */
export const KEY_MAX = 512;

/**
 * Why `key` cannot be an idempotency key, or null when it can: at most 512 printable characters. Anything
 * printable goes (keys come from content: `run:step:7`, a hash, a path), but not control, format or invisible
 * characters (\p{C}): a NUL breaks PostgreSQL's text, invisible ones make two keys that look equal differ.
 * Above all no unpaired surrogate: a string that is not valid UTF-16 has no UTF-8 form, so PostgreSQL stores
 * `report-\ud83d` and `report-\ud83c` as one key (the second was "skipped" with the first's result, its side
 * effect never run) and SQLite reads them back garbled. One rule for the HTTP API and Checkpoint.runOnce.
 */
export function keyProblem(key: unknown): string | null {
  if (typeof key !== 'string') return 'must be a string';
  if (key.length === 0) return 'must not be empty';
  if (key.length > KEY_MAX) return `must be at most ${KEY_MAX} characters`;
  if (printableAscii(key)) return null;
  if (/\p{Cs}/u.test(key))
    return 'must not contain an unpaired surrogate (it is not valid UTF-16, so it has no UTF-8 form to store)';
  if (/\p{C}/u.test(key)) return 'must not contain control or invisible characters';
  return null;
}

/** Whether every character is printable ASCII (space to tilde), as nearly every key is: none is \p{C}. */
function printableAscii(key: string): boolean {
  for (let i = 0; i < key.length; i++) {
    const code = key.charCodeAt(i);
    if (code < 0x20 || code > 0x7e) return false;
  }
  return true;
}

/** Throws InvalidInputError naming the key (escaped, and cut if long) when keyProblem finds one. */
export function assertIdempotencyKey(key: unknown, what = 'idempotency key'): asserts key is string {
  const problem = keyProblem(key);
  if (problem === null) return;
  const shown = typeof key === 'string' ? JSON.stringify(key.length > 80 ? `${key.slice(0, 80)}…` : key) : String(key);
  throw new InvalidInputError(`${what} ${shown} ${problem}; nothing was written`);
}

/** The article's key: the run and the step's position in it. */
export function stepKey(runId: string, step: number): string {
  if (!Number.isInteger(step) || step < 0) throw new RangeError(`step must be a non-negative integer, got ${step}`);
  return `${runId}:step:${step}`;
}

/**
 * The run a key is of, by how runs make their keys: `<run>:step:<n>` (stepKey) or `<run>:<name>` with no `:` in
 * the name; null for a key of no run (a content hash). Run ids may contain `:`, so this is what gives a key one
 * run at most: `acme:nightly:step:0` is run acme:nightly's step 0, never run acme's step named `nightly:step:0`.
 */
export function keyRun(key: string): string | null {
  const step = /^(.+):step:\d+$/.exec(key);
  if (step) return step[1]!;
  const colon = key.lastIndexOf(':');
  return colon > 0 ? key.slice(0, colon) : null;
}

/** sha-256 of the value's canonical JSON: equal values give equal keys whatever their key order. */
export function contentKey(value: unknown): string {
  return sha256Hex(canonicalJson(value));
}

// crypto.hash (Node 20.12+) is one call with no Hash object: a third of createHash's cost, paid on every step.
const oneShot = (crypto as { hash?: (algorithm: string, data: string, encoding: 'hex') => string }).hash;
const sha256Hex = oneShot
  ? (text: string) => oneShot('sha256', text, 'hex')
  : (text: string) => crypto.createHash('sha256').update(text).digest('hex');
