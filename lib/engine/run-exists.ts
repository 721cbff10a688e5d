/**
 * A start under an id that is taken: the same workflow and the same parsed input is the run asked for, so the
 * start is answered with it (a client retrying a start it never heard back from queues it once); anything
 * else is refused, naming the first thing that differs.
 */
import { RunExistsError } from '../errors';
import type { RunRow } from '../store/contract';

/** Null: `run` is this start's run. Otherwise why it is not, for RunExistsError. */
export function runExistsDifference(run: RunRow, workflow: string, input: unknown): string | null {
  if (run.workflow !== workflow) return `another workflow: it is ${run.workflow}, not ${workflow}`;
  // Both as stored: JSON drops the keys an input leaves undefined.
  const found = firstDifference(JSON.parse(run.inputJson), JSON.parse(JSON.stringify(input) ?? 'null'), 'input');
  return found ? `another input: ${found}` : null;
}

export function runExists(run: RunRow, workflow: string, input: unknown): RunRow {
  const difference = runExistsDifference(run, workflow, input);
  if (difference) throw new RunExistsError(run.id, difference);
  return run;
}

const shown = (value: unknown) => (value === undefined ? 'not set' : JSON.stringify(value));

/** The first path at which two JSON values differ, as "input.count is 3, not 4" (stored first), or null. */
function firstDifference(stored: unknown, given: unknown, path: string): string | null {
  if (Array.isArray(stored) && Array.isArray(given)) {
    for (let i = 0; i < Math.max(stored.length, given.length); i++) {
      const found = firstDifference(stored[i], given[i], `${path}[${i}]`);
      if (found) return found;
    }
    return null;
  }
  if (isObject(stored) && isObject(given)) {
    for (const key of [...new Set([...Object.keys(stored), ...Object.keys(given)])].sort()) {
      const found = firstDifference(stored[key], given[key], `${path}.${key}`);
      if (found) return found;
    }
    return null;
  }
  return stored === given ? null : `${path} is ${shown(stored)}, not ${shown(given)}`;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
