/** Shared by both backends: whether a re-sent event is the one recorded under its id. */
import { EventConflictError } from '../../errors';
import type { EventRow } from '../contract';

/** The stored row when the re-send matches it; EventConflictError naming what differs when not. */
export function sameEvent(stored: EventRow, sent: { name: string; dataJson: string }): EventRow {
  const differs: string[] = [];
  if (stored.name !== sent.name) differs.push('name');
  if (!sameJson(stored.dataJson, sent.dataJson)) differs.push('data');
  if (differs.length > 0) throw new EventConflictError(stored.id, differs);
  return stored;
}

/** Equal as JSON values: a re-send that writes an object's keys in another order sends the same data. */
function sameJson(a: string, b: string): boolean {
  return a === b || canonical(JSON.parse(a)) === canonical(JSON.parse(b));
}

function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value === null || typeof value !== 'object') return JSON.stringify(value);
  const entries = Object.entries(value as Record<string, unknown>).sort(([x], [y]) => (x < y ? -1 : x > y ? 1 : 0));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(',')}}`;
}
