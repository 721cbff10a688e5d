/**
 * Starting a run: the one place input crosses into the store, so it is parsed here against the
 * workflow's schema and stored parsed (defaults applied), and the id is checked.
 */
import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import { InvalidInputError } from '../errors';
import type { RunRow, RunStore } from '../store/types';
import type { WorkflowRegistry } from './workflow';

export const runIdSchema = z
  .string()
  .min(1)
  .max(128)
  .regex(/^[A-Za-z0-9][A-Za-z0-9._:-]*$/, 'letters, digits and . _ : - only, starting with a letter or digit');

export async function startRun(
  store: RunStore,
  registry: WorkflowRegistry,
  request: { workflow: string; input: unknown; id?: string },
): Promise<RunRow> {
  const definition = registry.get(request.workflow);
  const input = registry.parseInput(request.workflow, request.input);
  const id = request.id ?? `${request.workflow}-${new Date().toISOString().slice(0, 10)}-${randomBytes(4).toString('hex')}`;
  const checked = runIdSchema.safeParse(id);
  if (!checked.success) throw new InvalidInputError(`invalid run id ${JSON.stringify(id.slice(0, 140))}: ${checked.error.issues[0]?.message}`);
  return store.createRun({
    id, workflow: definition.name, inputJson: JSON.stringify(input), totalSteps: definition.totalSteps?.(input) ?? null,
  });
}
