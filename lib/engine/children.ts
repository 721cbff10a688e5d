/**
 * Child runs: a workflow starts other runs and waits for them, as Temporal's child workflows and Inngest's
 * step.invoke do, built from Waybill's two durable pieces instead of an event history:
 * - Starting one is a step (`child:<name>`) whose side effect is an idempotent start under an id derived from
 *   the parent and the name. A parent whose worker dies between the start and the commit starts the same id
 *   again, finds its own child there (startRun answers it, `existed`), and commits it: started once.
 * - Waiting for one is a durable wait of kind `child`, named for the child's id. The store decides it in the
 *   transaction that ends the child (finishRun, a cancel: lib/store/shared/children.ts), and wakes a parent
 *   parked on it; a child that ended before its parent got there has left its wait decided. A parent waiting
 *   holds no worker slot, as with any wait.
 * A parent's cancel cancels its children (and theirs) unless they were started detached.
 */
import { createHash } from 'node:crypto';
import { newRunIdProblem } from '../domain/run-id';
import { ChildRunFailedError, InvalidInputError } from '../errors';
import type { RunRow } from '../store/contract';
import type { ChildOutcome } from '../store/shared/children';
import { type Parking, waitForChild, waitForFirstChild } from './waits';

export type { ChildOutcome } from '../store/shared/children';

/**
 * What a run needs to have children: a start (the engine's startRun over the workflows some worker serves, so a
 * child's input is checked as any start's is) and a read of a run.
 */
export interface Family {
  start(request: {
    workflow: string;
    input: unknown;
    id: string;
    parentRunId: string;
    detached: boolean;
    tags?: string[];
    metadata?: Record<string, string>;
  }): Promise<RunRow>;
  getRun(id: string): Promise<RunRow | null>;
}

export interface ChildOptions {
  /** The child's run id; by default `<parent id>:<name>`. */
  id?: string;
  /** A detached child outlives its parent's cancel. */
  detached?: boolean;
  /** The child's tags and metadata (lib/domain/run-tags.ts), as a start's. */
  tags?: string[];
  metadata?: Record<string, string>;
}

export interface WaitChildOptions {
  /**
   * Answer how each child ended (ChildOutcome) instead of its output; without it a child that did not complete
   * throws ChildRunFailedError.
   */
  settled?: boolean;
}

/** The child's id: the one given, or the parent's and the name's, checked as every new run id is. */
export function childRunId(parentId: string, name: string, options: ChildOptions): string {
  const id = options.id ?? `${parentId}:${name}`;
  const problem = newRunIdProblem(id);
  if (problem !== undefined) {
    const hint = options.id === undefined ? ' (pass { id } to name the child yourself)' : '';
    throw new InvalidInputError(`startChild(${name}): run id ${JSON.stringify(id.slice(0, 140))} ${problem}${hint}`);
  }
  return id;
}

/** The step's side effect: the child's start, once, under its id. */
export async function startChildRun(
  family: Family,
  parentId: string,
  /** `traceparent`: the parent's execution's run span, so the child's spans are in the parent's trace. */
  request: {
    workflow: string;
    input: unknown;
    id: string;
    detached: boolean;
    tags?: string[];
    metadata?: Record<string, string>;
    traceparent?: string;
  },
): Promise<{ runId: string }> {
  const run = await family.start({ ...request, parentRunId: parentId });
  // An id taken by a run that is not this parent's child: waiting on it would wait on a stranger.
  if (run.parentRunId !== parentId)
    throw new InvalidInputError(`startChild: run ${run.id} exists and is not a child of ${parentId}`);
  return { runId: run.id };
}

/**
 * Refuses to wait on a run that is not the parent's child: waiting on a stranger would wait for ever. A wait the
 * parent already has for it says it is: the store records it when the child ends, so a child pruned since (its row
 * gone, its parent still going) is still answered from it.
 */
async function mustBeChild(p: Parking, family: Family, parentId: string, childId: string, method: string) {
  if (await p.store.getWait(parentId, 'child', childId)) return;
  const child = await family.getRun(childId);
  if (child?.parentRunId !== parentId)
    throw new InvalidInputError(
      `${method}: run ${childId} is not a child of ${parentId} (start it with ctx.startChild)`,
    );
}

/** Parks until the child has ended; its output, or how it ended with `settled`. */
export async function awaitChild(
  p: Parking,
  family: Family,
  parentId: string,
  childId: string,
  options: WaitChildOptions = {},
): Promise<unknown> {
  await mustBeChild(p, family, parentId, childId, 'waitForChild');
  const outcome: ChildOutcome = await waitForChild(p, parentId, childId);
  if (options.settled) return outcome;
  if (outcome.status !== 'completed') throw new ChildRunFailedError(outcome);
  return outcome.output;
}

/**
 * The step that keeps a race's answer, named by its children (in any order): asked again, the same race is the same
 * step. `keep` commits it (ctx.step) and answers what was committed.
 */
export const firstChildStep = (ids: string[]): string =>
  `first-child:${createHash('sha256')
    .update([...ids].sort().join('\n'))
    .digest('hex')
    .slice(0, 16)}`;

/**
 * Parks until the first of the children has ended. Its output with its id, or how it ended with `settled`; a
 * first to end that did not complete throws ChildRunFailedError, as Promise.race rejects. The answer is kept as a
 * step: the times the store records the ends at need not follow the order the ends were committed in (on
 * PostgreSQL each is its transaction's start), so a replay could find an end earlier than the one this run acted on.
 */
export async function awaitFirstChild(
  p: Parking,
  family: Family,
  parentId: string,
  childIds: string[],
  options: WaitChildOptions,
  keep: (step: string, outcome: ChildOutcome) => Promise<ChildOutcome>,
): Promise<ChildOutcome | { runId: string; output: unknown }> {
  if (!Array.isArray(childIds) || childIds.length === 0)
    throw new InvalidInputError('waitForFirstChild: give at least one child run id');
  const ids = [...new Set(childIds)];
  for (const id of ids) await mustBeChild(p, family, parentId, id, 'waitForFirstChild');
  const outcome = await keep(firstChildStep(ids), await waitForFirstChild(p, parentId, ids));
  if (options.settled) return outcome;
  if (outcome.status !== 'completed') throw new ChildRunFailedError(outcome);
  return { runId: outcome.runId, output: outcome.output };
}
