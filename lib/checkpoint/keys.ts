/**
 * Idempotency keys come from what is processed, never from time or attempt: a key that changes across
 * resumes voids the protocol (the article's second operational lesson).
 */
import { createHash } from 'node:crypto';

/** The article's key: the run and the step's position in it. */
export function stepKey(runId: string, step: number): string {
  if (!Number.isInteger(step) || step < 0) throw new RangeError(`step must be a non-negative integer, got ${step}`);
  return `${runId}:step:${step}`;
}

/** sha-256 of the value's canonical JSON: equal values give equal keys whatever their key order. */
export function contentKey(value: unknown): string {
  return createHash('sha256').update(canonicalJson(value)).digest('hex');
}

/** JSON with object keys sorted at every depth; undefined members are dropped as JSON.stringify does. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(sortKeys(value)) ?? 'null';
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value === null || typeof value !== 'object') return value;
  if (typeof (value as { toJSON?: unknown }).toJSON === 'function') return sortKeys((value as { toJSON(): unknown }).toJSON());
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(value).sort()) out[key] = sortKeys((value as Record<string, unknown>)[key]);
  return out;
}
