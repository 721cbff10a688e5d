/**
 * Starting a run: the one place input crosses into the store, so it is checked here against the
 * workflow's schema (its own, or the one its workers published) and stored parsed (defaults applied),
 * and the id is checked.
 */
import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import { InvalidInputError, NotFoundError } from '../errors';
import type { RunRow, RunStore } from '../store/types';
import { inputError } from './input-check';
import type { StartableWorkflows } from './workflow';

export const runIdSchema = z
  .string()
  .min(1)
  .max(128)
  .regex(/^[A-Za-z0-9][A-Za-z0-9._:-]*$/, 'letters, digits and . _ : - only, starting with a letter or digit');

export function unknownWorkflow(name: string, workflows: StartableWorkflows): NotFoundError {
  return new NotFoundError(`workflow ${JSON.stringify(name)} (known: ${workflows.names().join(', ')})`);
}

export async function startRun(
  store: Pick<RunStore, 'createRun'>,
  workflows: StartableWorkflows,
  request: { workflow: string; input: unknown; id?: string },
): Promise<RunRow> {
  const checked = workflows.check(request.workflow, request.input);
  if (!checked) throw unknownWorkflow(request.workflow, workflows);
  if (!checked.ok) throw inputError(request.workflow, checked.issues);
  const id =
    request.id ?? `${request.workflow}-${new Date().toISOString().slice(0, 10)}-${randomBytes(4).toString('hex')}`;
  const valid = runIdSchema.safeParse(id);
  if (!valid.success)
    throw new InvalidInputError(
      `invalid run id ${JSON.stringify(id.slice(0, 140))}: ${valid.error.issues[0]?.message}`,
    );
  return store.createRun({
    id,
    workflow: checked.workflow,
    inputJson: JSON.stringify(checked.input),
    totalSteps: checked.totalSteps,
  });
}
