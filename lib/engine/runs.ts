/**
 * Starting a run: the one place input crosses into the store, so it is checked here against the
 * workflow's schema (its own, or the one its workers published) and stored parsed (defaults applied),
 * and the id is checked.
 */
import { randomBytes } from 'node:crypto';
import { newRunId, newRunIdProblem } from '../domain/run-id';
import { InvalidInputError, NotFoundError } from '../errors';
import type { RunRow, RunStore } from '../store/types';
import { inputError } from './input-check';
import type { StartableWorkflows } from './workflow';

/** A new run's id: the creation rule of lib/domain/run-id, under the name the package exports. */
export const runIdSchema = newRunId;

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
  const problem = newRunIdProblem(id);
  if (problem !== undefined)
    throw new InvalidInputError(`invalid run id ${JSON.stringify(id.slice(0, 140))}: ${problem}`);
  return store.createRun({
    id,
    workflow: checked.workflow,
    inputJson: JSON.stringify(checked.input),
    totalSteps: checked.totalSteps,
  });
}
