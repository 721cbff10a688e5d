/**
 * Unstable keys: one piece of work committed under more than one key in a run, so its idempotency was void
 * (a key with the time or an attempt mixed in changes across resumes, and the side effect runs again). Both
 * backends read the candidates; the rules are here, once.
 *
 * - Same step, several keys: the caller numbered the step, so two keys for it are one step run twice.
 * - No step number, the same fingerprint under several keys: the caller said the input was the same.
 * - No step number, keys equal but for an attempt counter (`attempt-2`, `retry3`, `try:1`): a key that counts
 *   attempts is a new key per attempt, always.
 * - No step number, keys equal but for a timestamp (epoch seconds or milliseconds, an ISO date-time with
 *   seconds) that is the time its row was committed, give or take a day: that is Date.now() at execution,
 *   not a period the work is about (a digest for a past day names a time far from when it ran). Keys that
 *   differ in anything else (an item's number, a hash) are other work and are never grouped.
 */
import type { UnstableKeyGroup } from '../contract';

/** A committed row with no step number that may be part of a group: its key, fingerprint and commit time. */
export interface UnstableCandidate {
  idemKey: string;
  fingerprint: string | null;
  committedAt: number;
}

/** How many stepless candidate rows a backend reads at most: the check is a warning, bounded like every read. */
export const UNSTABLE_CANDIDATES = 5000;

const ISO = /\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?/g;
/** Epoch milliseconds (13 digits) or seconds (10), from 2001 to 2065, with an optional fraction. */
const EPOCH = /(?<![\d.])([1-3]\d{12}|[1-3]\d{9})(?:\.\d+)?(?![\d.])/g;
const ATTEMPT = /(attempt|retry|try)([\s_:#=-]?)\d+/gi;

/** Seconds either side of the commit a key's time may be, to be the time it ran. */
const NEAR_BEFORE_S = 86_400;
const NEAR_AFTER_S = 60;

/** The key with its volatile parts masked, and which kinds it had; null when it had none. */
export function maskVolatile(key: string, committedAt: number): { shape: string; why: 'time' | 'attempt' } | null {
  let why: 'time' | 'attempt' | null = null;
  const near = (seconds: number) => seconds >= committedAt - NEAR_BEFORE_S && seconds <= committedAt + NEAR_AFTER_S;
  let shape = key.replace(ATTEMPT, (_, word: string, sep: string) => {
    why = 'attempt';
    return `${word}${sep}<n>`;
  });
  shape = shape.replace(ISO, (text) => {
    const seconds = Date.parse(text.replace(' ', 'T')) / 1000;
    if (!near(seconds)) return text;
    why ??= 'time';
    return '<time>';
  });
  shape = shape.replace(EPOCH, (text, digits: string) => {
    const seconds = Number(text) / (digits.length === 13 ? 1000 : 1);
    if (!near(seconds)) return text;
    why ??= 'time';
    return '<time>';
  });
  return why ? { shape, why } : null;
}

/** The stepless groups among the candidates: by fingerprint, then by masked shape; each key set once. */
export function stepless(candidates: UnstableCandidate[]): UnstableKeyGroup[] {
  const groups: UnstableKeyGroup[] = [];
  const seen = new Set<string>();
  const add = (keys: string[], why: UnstableKeyGroup['why']) => {
    const sorted = [...new Set(keys)].sort();
    const id = JSON.stringify(sorted);
    if (sorted.length < 2 || seen.has(id)) return;
    seen.add(id);
    groups.push({ step: null, keys: sorted, why });
  };
  const byFingerprint = new Map<string, string[]>();
  for (const c of candidates) {
    if (c.fingerprint !== null)
      byFingerprint.set(c.fingerprint, [...(byFingerprint.get(c.fingerprint) ?? []), c.idemKey]);
  }
  for (const keys of byFingerprint.values()) add(keys, 'fingerprint');
  const byShape = new Map<string, { keys: string[]; why: 'time' | 'attempt' }>();
  for (const c of candidates) {
    const masked = maskVolatile(c.idemKey, c.committedAt);
    if (!masked) continue;
    const group = byShape.get(masked.shape) ?? { keys: [], why: masked.why };
    group.keys.push(c.idemKey);
    if (masked.why === 'attempt') group.why = 'attempt';
    byShape.set(masked.shape, group);
  }
  for (const { keys, why } of byShape.values()) add(keys, why);
  return groups.sort((a, b) => (a.keys[0]! < b.keys[0]! ? -1 : 1));
}
