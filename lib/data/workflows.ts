import 'server-only';
/**
 * The start form's choices: each workflow the control plane can start (built-ins and published), with its
 * input's JSON Schema, an example, and whether any live worker serves it.
 */
import type { CatalogEntry } from '../engine/catalog';
import { getCatalog } from './store';

/** The built-ins' examples say more than their defaults would: a run long enough to watch. */
const EXAMPLES: Record<string, unknown> = {
  'agent-batch': { count: 50, latencyMs: 200, failureRate: 0.05 },
  notify: { count: 20, outbox: 'notify-outbox.jsonl', latencyMs: 100 },
};

export interface WorkflowChoice extends CatalogEntry {
  /** JSON text the input starts as: the built-in's example, else each top-level default. */
  example: string;
}

export async function getWorkflowChoices(): Promise<WorkflowChoice[]> {
  const catalog = await getCatalog();
  return catalog.entries().map((entry) => ({
    ...entry,
    example: JSON.stringify(EXAMPLES[entry.name] ?? defaultsOf(entry.inputSchema), null, 2),
  }));
}

/** The defaults of an object schema's properties: what a run gets for what the form leaves out. */
function defaultsOf(schema: Record<string, unknown> | null): Record<string, unknown> {
  const properties = schema?.properties;
  if (typeof properties !== 'object' || properties === null) return {};
  const out: Record<string, unknown> = {};
  for (const [name, property] of Object.entries(properties as Record<string, Record<string, unknown>>)) {
    if (property && typeof property === 'object' && 'default' in property) out[name] = property.default;
  }
  return out;
}
