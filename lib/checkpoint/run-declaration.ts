/**
 * What a library loop may say about its run, checked once when it says it: a workflow name the runs list
 * can filter on (the API's rule), a whole number of steps, an input that is JSON and text a store keeps.
 */
import { jsonTextProblems } from '../domain/text';
import { InvalidInputError } from '../errors';

export interface RunDeclaration {
  workflow: string;
  totalSteps: number | null;
  inputJson: string;
}

const WORKFLOW = /^[a-z][a-z0-9-]{0,63}$/;

export function checkDeclaration(run: { workflow?: string; totalSteps?: number; input?: unknown }): RunDeclaration {
  if (run.workflow === undefined) {
    throw new InvalidInputError('a run declared with totalSteps needs its workflow name too (options.workflow)');
  }
  if (typeof run.workflow !== 'string' || !WORKFLOW.test(run.workflow)) {
    throw new InvalidInputError(
      `workflow must be 1-64 lowercase letters, digits and dashes, starting with a letter; got ${JSON.stringify(run.workflow)}`,
    );
  }
  if (run.workflow === 'external') {
    throw new InvalidInputError('workflow "external" is what the dashboard calls undeclared runs: choose another name');
  }
  const total = run.totalSteps;
  if (total !== undefined && (!Number.isSafeInteger(total) || total < 0 || total > 2_147_483_647)) {
    throw new InvalidInputError(`totalSteps must be a whole number from 0 to 2147483647, got ${total}`);
  }
  let inputJson: string;
  try {
    inputJson = JSON.stringify(run.input ?? null) ?? 'null';
  } catch (error) {
    throw new InvalidInputError(`the run's input must be JSON: ${(error as Error).message}`);
  }
  // Text a store keeps, as a start's input is: the pick of a workflow of that name reads its runs' inputs.
  const [unstorable] = jsonTextProblems(JSON.parse(inputJson));
  if (unstorable)
    throw new InvalidInputError(
      `the run's input ${unstorable.path.length ? `at ${unstorable.path.join('.')} ` : ''}${unstorable.message}`,
    );
  return { workflow: run.workflow, totalSteps: total ?? null, inputJson };
}
