/** Shared by both backends: which live workers serve each published workflow. */
import type { PublishedWorkflow } from '../contract';

/** Joins each workflow to the live workers whose served list names it (the list is JSON: parsed here, not in SQL). */
export function withServers(
  rows: Omit<PublishedWorkflow, 'servedBy'>[],
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
  return rows.map((row) => ({ ...row, servedBy: servers.get(row.name) ?? [] }));
}
