/** Shared by both backends: which live workers serve each published workflow. */
import type { RunLimits } from '../../domain/run-limits';
import type { PublishedWorkflow } from '../contract';
import { readLimits } from './run-limits-sql';

/** Joins each workflow to the live workers whose served list names it (the list is JSON: parsed here, not in SQL). */
export function withServers(
  rows: (Omit<PublishedWorkflow, 'servedBy' | 'events' | 'limits'> & {
    eventsJson: string | null;
    limitsJson: string | null;
  })[],
  live: { id: string; workflowsJson: string }[],
): PublishedWorkflow[] {
  const servers = new Map<string, string[]>();
  for (const worker of live) {
    let names: unknown;
    try {
      names = JSON.parse(worker.workflowsJson);
    } catch {
      continue; // a row written by something else; it serves nothing we can tell
    }
    if (!Array.isArray(names)) continue;
    for (const name of names)
      if (typeof name === 'string') servers.set(name, [...(servers.get(name) ?? []), worker.id]);
  }
  return rows.map(({ eventsJson, limitsJson, ...row }) => ({
    ...row,
    events: eventNames(eventsJson),
    // Read as the pick reads it (run-limits-sql.ts), so a held run's reason counts against the limit it is held by.
    limits: readLimits(limitsJson),
    servedBy: servers.get(row.name) ?? [],
  }));
}

function eventNames(text: string | null): string[] {
  if (text === null) return [];
  try {
    const names: unknown = JSON.parse(text);
    return Array.isArray(names) ? names.filter((n): n is string => typeof n === 'string') : [];
  } catch {
    return [];
  }
}

/** What a publication's `on` is stored as: null for none, so a row published before events reads the same. */
export function limitsJson(limits: RunLimits | undefined): string | null {
  return limits && Object.keys(limits).length > 0 ? JSON.stringify(limits) : null;
}

export function eventsJson(names: string[] | undefined): string | null {
  return names && names.length > 0 ? JSON.stringify(names) : null;
}
