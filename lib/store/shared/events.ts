/** Shared by both backends: whether a re-sent event is the one recorded under its id. */
import { canonicalJson } from '../../domain/canonical-json';
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
  return a === b || canonicalJson(JSON.parse(a)) === canonicalJson(JSON.parse(b));
}
