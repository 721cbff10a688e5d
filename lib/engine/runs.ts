/**
 * Starting a run: the one place input crosses into the store, so it is checked here against the
 * workflow's schema (its own, or the one its workers published) and stored parsed (defaults applied),
 * and the id is checked. A start under a taken id is answered with that run when its workflow and parsed
 * input are the same (`existed: true`), and refused (RunExistsError) when not: run-exists.ts.
 */
import { randomBytes } from 'node:crypto';
import { budgetProblem } from '../domain/budget';
import { newRunId, newRunIdProblem } from '../domain/run-id';
import { prioritySchema } from '../domain/run-limits';
import { traceparentProblem } from '../domain/traceparent';
import { ConflictError, InvalidInputError, NotFoundError } from '../errors';
import type { RunRow, RunStore } from '../store/contract';
import { runExists } from './run-exists';
import { startTags } from './run-tags';
import { type StartableWorkflows, startRefusal } from './workflow';

/** A new run's id: the creation rule of lib/domain/run-id, under the name the package exports. */
export const runIdSchema = newRunId;

export function unknownWorkflow(name: string, workflows: StartableWorkflows): NotFoundError {
  return new NotFoundError(`workflow ${JSON.stringify(name)} (known: ${workflows.names().join(', ')})`);
}

/** A started run; `existed`: it was there already, with this workflow and input, and nothing was written. */
export type StartedRun = RunRow & { existed: boolean };

export async function startRun(
  store: Pick<RunStore, 'createRun' | 'getRun'>,
  workflows: StartableWorkflows,
  /**
   * `budgetUsd`: the run's own budget, over its workflow's default (lib/domain/budget).
   * `parentRunId`, `detached`: a child run's (children.ts). `tags`, `metadata`: checked here as everywhere
   * (lib/domain/run-tags), written with the row; they are not part of what makes a start a repeat: a repeat
   * answers the run with the tags it has, and writes none (run-exists.ts).
   */
  request: {
    workflow: string;
    input: unknown;
    id?: string;
    budgetUsd?: number;
    parentRunId?: string;
    detached?: boolean;
    /** Its own priority, over its workflow's default (lib/domain/run-limits). */
    priority?: number;
    tags?: string[];
    metadata?: Record<string, string>;
    /**
     * The W3C trace context its spans continue (lib/tracing.ts), kept with the run so every execution, on any
     * worker, joins that trace. None: its first traced execution starts a trace of its own.
     */
    traceparent?: string;
  },
): Promise<StartedRun> {
  const checked = workflows.check(request.workflow, request.input);
  if (!checked) throw unknownWorkflow(request.workflow, workflows);
  if (!checked.ok) throw startRefusal(request.workflow, checked);
  const id =
    request.id ?? `${request.workflow}-${new Date().toISOString().slice(0, 10)}-${randomBytes(4).toString('hex')}`;
  const traced = request.traceparent === undefined ? undefined : traceparentProblem(request.traceparent);
  if (traced !== undefined) throw new InvalidInputError(`invalid traceparent: ${traced}`);
  const problem = newRunIdProblem(id);
  if (problem !== undefined)
    throw new InvalidInputError(`invalid run id ${JSON.stringify(id.slice(0, 140))}: ${problem}`);
  const { tags, metadata } = startTags(request);
  // Exported as it is, startRun checks what its callers check before it: a library caller may not have.
  const budget = request.budgetUsd === undefined ? undefined : budgetProblem('budgetUsd', request.budgetUsd);
  if (budget !== undefined) throw new InvalidInputError(`start: ${budget}`);
  const priority = request.priority === undefined ? null : prioritySchema.safeParse(request.priority);
  if (priority && !priority.success)
    throw new InvalidInputError(`start: priority ${priority.error.issues[0]!.message}`);
  try {
    const run = await store.createRun({
      id,
      workflow: checked.workflow,
      inputJson: JSON.stringify(checked.input),
      totalSteps: checked.totalSteps,
      ...(request.budgetUsd === undefined ? {} : { budgetUsd: request.budgetUsd }),
      parentRunId: request.parentRunId ?? null,
      detached: request.detached ?? false,
      priority: request.priority ?? checked.priority ?? 0,
      tags,
      metadata,
      traceparent: request.traceparent ?? null,
    });
    return { ...run, existed: false };
  } catch (error) {
    if (!(error instanceof ConflictError)) throw error;
    // Read after the refused insert, not before: of two starts racing for one id, one inserts and the other
    // finds its row. A row pruned meanwhile leaves the store's own refusal standing.
    const existing = await store.getRun(id);
    if (!existing) throw error;
    const asked = { budgetUsd: request.budgetUsd, priority: request.priority };
    return { ...runExists(existing, checked.workflow, checked.input, asked), existed: true };
  }
}
