/**
 * A start under an id that is taken: the same workflow and the same parsed input is the run asked for, so the
 * start is answered with it (a client retrying a start it never heard back from queues it once); anything
 * else is refused, naming the first thing that differs.
 */
import { RunExistsError } from '../errors';
import type { RunRow } from '../store/contract';

/**
 * What a start asks of its run besides the workflow and input. A field it leaves out is not compared: the run has
 * whatever it was started with. One it gives must be the run's, or a retried start would be answered with a run
 * that has another budget or priority than the caller asked for, and never hear of it.
 */
export interface StartedWith {
  budgetUsd?: number;
  priority?: number;
}

/** Null: `run` is this start's run. Otherwise why it is not, for RunExistsError. */
export function runExistsDifference(
  run: RunRow,
  workflow: string,
  input: unknown,
  asked: StartedWith = {},
): string | null {
  if (run.workflow !== workflow) return `another workflow: it is ${run.workflow}, not ${workflow}`;
  // Both as stored: JSON drops the keys an input leaves undefined.
  const found = firstDifference(JSON.parse(run.inputJson), JSON.parse(JSON.stringify(input) ?? 'null'), 'input');
  if (found) return `another input: ${found}`;
  if (asked.budgetUsd !== undefined && run.budgetUsd !== asked.budgetUsd)
    return `another budget: it is ${run.budgetUsd === null ? 'not set' : `$${run.budgetUsd}`}, not $${asked.budgetUsd}`;
  if (asked.priority !== undefined && run.priority !== asked.priority)
    return `another priority: it is ${run.priority}, not ${asked.priority}`;
  return null;
}

export function runExists(run: RunRow, workflow: string, input: unknown, asked: StartedWith = {}): RunRow {
  const difference = runExistsDifference(run, workflow, input, asked);
  if (difference) throw new RunExistsError(run.id, difference);
  return run;
}

/**
 * The first path at which two JSON values differ (stored first), or null: "input.count is 3, not 4", "input.count
 * is 3, and this start leaves it out", "input.count is not set, and this start gives 4".
 */
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
  if (stored === given) return null;
  if (given === undefined) return `${path} is ${JSON.stringify(stored)}, and this start leaves it out`;
  if (stored === undefined) return `${path} is not set, and this start gives ${JSON.stringify(given)}`;
  return `${path} is ${JSON.stringify(stored)}, not ${JSON.stringify(given)}`;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
