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
 * A parent's cancel cancels its children (and theirs) unless they were started detached; the parent's retry brings
 * those back, and opens its waits for them again (the store's actOnRun, lib/store/shared/children.ts).
 *
 * Retries, reruns and forks (docs/guide.md, "Agents that fan out"):
 * - A child's end that did not complete is its parent's answer once the parent has acted on it; until then an
 *   operator's retry of the child may end it otherwise, and that end takes its place (the store's settleChild
 *   judges, in the child's end transaction). So before it acts on such an end the parent records that it read it:
 *   the wait for the child's next end (`<child>#2`…, nextEndName), which it parks on when the child is running
 *   again. A replay reads the wait as it stands: replaced only while nothing of the parent depends on it.
 * - A rerun of the parent from before a child's start lets that child go (no parent, detached: shared/rewind.ts),
 *   and the step starts a new one, under `<id>.r2` (`.r3`…): a new run, with a wait of its own.
 * - A fork from after a child's start keeps the child: it copies the step and its original's wait for the child,
 *   which the child's end decides as it decides the original's.
 */
import { createHash } from 'node:crypto';
import { newRunIdProblem } from '../domain/run-id';
import { ChildRunFailedError, InvalidInputError, NonRetryableError, NotFoundError, RunExistsError } from '../errors';
import type { RunRow } from '../store/contract';
import { type ChildOutcome, ENDED } from '../store/shared/children';
import { CHILD_READER, nextEndName } from '../store/shared/rewind';
import { type Parking, waitFor, waitForChild, waitForFirstChild } from './waits';

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

/**
 * The step's side effect: the child's start, once, under its id. An id a rerun of this parent let go (its run has
 * no parent and is detached: shared/rewind.ts) is passed over for the next, `<id>.r2`, `.r3`…: the rerun starts a
 * child anew, and the same walk finds the one an earlier attempt of this step started. An id another run holds
 * (another workflow's, other input, or not this parent's child) is NonRetryableError: another attempt would find
 * the same run there, so the step fails at once, naming the id, with the store's refusal as its cause; so does a
 * start refused for its workflow or its input.
 */
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
  for (let generation = 1; ; generation++) {
    const id = generation === 1 ? request.id : `${request.id}.r${generation}`;
    const problem = newRunIdProblem(id);
    if (problem !== undefined)
      throw new NonRetryableError(`startChild: run id ${JSON.stringify(id.slice(0, 140))} ${problem}`);
    const run = await startOrFind(family, { ...request, id, parentRunId: parentId });
    if (run.parentRunId === parentId) return { runId: run.id };
    if (letGo(run)) continue;
    // An id taken by a run that is not this parent's child: waiting on it would wait on a stranger.
    throw new NonRetryableError(`startChild: run ${run.id} exists and is not a child of ${parentId}`);
  }
}

/** A child a rerun of its parent let go: no parent, and detached, which no start makes a run without one. */
const letGo = (run: RunRow): boolean => run.parentRunId === null && run.detached;

/** The start; a run let go under that id answers itself whatever its input was, to be passed over. */
async function startOrFind(family: Family, request: Parameters<Family['start']>[0]): Promise<RunRow> {
  try {
    return await family.start(request);
  } catch (error) {
    // An unknown workflow or an input its schema refuses: the catalog is read once an execution, so every
    // attempt of this step would be refused alike.
    if (error instanceof InvalidInputError || error instanceof NotFoundError)
      throw new NonRetryableError(`startChild: ${error.message}`, { cause: error });
    if (!(error instanceof RunExistsError)) throw error;
    const taken = await family.getRun(request.id);
    if (taken && letGo(taken)) return taken;
    throw new NonRetryableError(`startChild: ${error.message}`, { cause: error });
  }
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
  const outcome = await childAnswer(p, family, parentId, childId);
  if (options.settled) return outcome;
  if (outcome.status !== 'completed') throw new ChildRunFailedError(outcome);
  return outcome.output;
}

/**
 * The answer the parent's wait for its child holds. One that did not complete is read on the record, before the
 * parent acts on it: a wait for the child's next end (nextEndName), decided at once with what it read while the
 * child has ended, or parked on while an operator's retry has the child running again, after which the parent
 * reads its own wait anew. A fork's copy of its original's answer, or a pruned child's, is answered as it stands.
 */
async function childAnswer(p: Parking, family: Family, parentId: string, childId: string): Promise<ChildOutcome> {
  for (;;) {
    const outcome = await waitForChild(p, parentId, childId);
    if (outcome.status === 'completed') return outcome;
    const child = await family.getRun(childId);
    if (child?.parentRunId !== parentId) return outcome;
    const name = await openNextEnd(p, parentId, childId);
    if (ENDED.includes(child.status)) {
      const read = await p.store.decideWait({
        runId: parentId,
        kind: 'child',
        name,
        decisionJson: JSON.stringify(outcome),
        decidedBy: CHILD_READER,
        createIfAbsent: true,
      });
      // Lost to the child's next end, decided meanwhile: the parent's wait may hold that end now.
      if (read.decided) return outcome;
      continue;
    }
    const next = await p.store.recordWait({ runId: parentId, name, kind: 'child' });
    if (next.decidedAt == null) await waitFor(p, parentId, 'child', name, {});
  }
}

/** The first wait for the child's next end that is absent or still open: the one to record, or to park on. */
async function openNextEnd(p: Parking, parentId: string, childId: string): Promise<string> {
  for (let n = 2; ; n++) {
    const name = nextEndName(childId, n);
    const wait = await p.store.getWait(parentId, 'child', name);
    if (!wait || wait.decidedAt == null) return name;
  }
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
