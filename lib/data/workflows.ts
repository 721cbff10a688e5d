import 'server-only';
/**
 * The start form's choices: each workflow with its input's JSON Schema (from its zod schema) and an example.
 */
import { z } from 'zod';
import { getRegistry } from './store';

const EXAMPLES: Record<string, unknown> = {
  'agent-batch': { count: 50, latencyMs: 200, failureRate: 0.05 },
  notify: { count: 20, outbox: 'notify-outbox.jsonl', latencyMs: 100 },
};

export interface WorkflowChoice {
  name: string;
  schema: unknown;
  example: string;
}

export async function getWorkflowChoices(): Promise<WorkflowChoice[]> {
  const registry = await getRegistry();
  return registry.names().map((name) => {
    const definition = registry.get(name);
    let schema: unknown = null;
    try {
      schema = z.toJSONSchema(definition.input, { unrepresentable: 'any' });
    } catch {
      schema = null;
    }
    return { name, schema, example: JSON.stringify(EXAMPLES[name] ?? {}, null, 2) };
  });
}
