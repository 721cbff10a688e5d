/**
 * JSON with object keys sorted at every depth: equal values give equal text whatever their key order. A step's
 * content key hashes it (lib/checkpoint/keys.ts), a re-sent event's data is compared by it (store/shared/events.ts),
 * and so is a wait's match against an event's data (engine/events.ts).
 */

/** Undefined members are dropped, and toJSON is called, as JSON.stringify does. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(sortKeys(value)) ?? 'null';
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value === null || typeof value !== 'object') return value;
  if (typeof (value as { toJSON?: unknown }).toJSON === 'function')
    return sortKeys((value as { toJSON(): unknown }).toJSON());
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(value).sort()) out[key] = sortKeys((value as Record<string, unknown>)[key]);
  return out;
}
