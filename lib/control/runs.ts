/**
 * Run operations: start one, and the operator's pause, resume, cancel and retry. Each authorizes the caller,
 * validates, calls the store, and records its audit line once the change took effect; the store writes the
 * run's own `operator` event in the same transaction as the change (actOnRun) or just after (start).
 */
import { z } from 'zod';
import { budgetUsdSchema } from '../domain/budget';
import { prioritySchema } from '../domain/run-limits';
import { metadataSchema, metaFilterText, tagsSchema } from '../domain/run-tags';
import { traceparentSchema } from '../domain/traceparent';
import { runIdSchema, type StartedRun, startRun } from '../engine/runs';
import { NotFoundError, StartRefusedError } from '../errors';
import type { RunAction, RunRow, RunTags, WebhookEventInput } from '../store/contract';
import { TRANSITIONS } from '../store/shared/transitions';
import { record } from './audit';
import { authorize, type Caller } from './caller';
import { validate } from './errors';
import { reasonField, runRef } from './fields';
import { startRefused } from './input-refusal';
import type { ControlDeps, ControlStore } from './store';

export const RUN_ACTIONS = Object.keys(TRANSITIONS) as RunAction[];

const startInput = z.strictObject({
  workflow: z
    .string({ error: 'must be a workflow name' })
    .min(1, 'choose a workflow')
    .max(64, 'must be at most 64 characters'),
  input: z.unknown().optional(),
  id: runIdSchema.optional(),
  /** The run's own budget (USD), over its workflow's default. */
  budgetUsd: budgetUsdSchema.optional(),
  /** Its priority (higher is picked first), over its workflow's default. */
  priority: prioritySchema.optional(),
  /** The run's tags and metadata (lib/domain/run-tags), which its steps may change later. */
  tags: tagsSchema.optional(),
  metadata: metadataSchema.optional(),
  /** The W3C trace context its spans continue. */
  traceparent: traceparentSchema.optional(),
  reason: reasonField,
});

/**
 * Queues a run of any workflow the catalog knows (built-in or published); the input is checked against its
 * schema and stored parsed (defaults applied). An unknown workflow or a wrong field is StartRefusedError.
 * An id that exists with this workflow and parsed input answers with that run (`existed`), unaudited and with
 * no event, since nothing happened; with another, RunExistsError (CONFLICT), naming what differs. Tags and
 * metadata take no part in that: a repeat answers the run as it is, its own tags kept (a retried start that
 * lost its answer is the same start, whatever its tags say; ctx.setTags may have changed them since).
 */
export async function start(
  deps: ControlDeps,
  caller: Caller,
  input: z.input<typeof startInput>,
): Promise<StartedRun & { runTags: RunTags }> {
  authorize(caller, 'operator');
  const given = validate(startInput, input);
  if (!deps.workflows) throw new Error('lib/control start: no workflows given');
  const store = await deps.store();
  const workflows = await deps.workflows(store);
  const checked = workflows.check(given.workflow, given.input ?? {});
  if (!checked) {
    const message = `unknown workflow ${JSON.stringify(given.workflow)} (known: ${workflows.names().join(', ')})`;
    throw new StartRefusedError(given.workflow, 'unknown-workflow', message, { workflow: [message] });
  }
  if (!checked.ok) throw startRefused(given.workflow, checked);
  const run = await startRun(store, workflows, {
    workflow: given.workflow,
    input: checked.input,
    id: given.id,
    budgetUsd: given.budgetUsd,
    priority: given.priority,
    tags: given.tags,
    metadata: given.metadata,
    traceparent: given.traceparent,
  });
  // A repeat answers the tags the run has, not the ones it was asked for now.
  if (run.existed) return { ...run, runTags: await store.getRunTags(run.id) };
  await store.recordEvent({ runId: run.id, outcome: 'operator', detail: `started by ${caller.actor}` });
  await record(store, caller, {
    action: 'start',
    target: run.id,
    runId: run.id,
    note: [
      `workflow ${run.workflow}`,
      given.budgetUsd === undefined ? null : `budget $${given.budgetUsd}`,
      given.priority === undefined ? null : `priority ${given.priority}`,
      given.tags?.length ? `tags ${given.tags.join(', ')}` : null,
      given.metadata && Object.keys(given.metadata).length
        ? `metadata ${Object.entries(given.metadata)
            .map(([k, v]) => metaFilterText({ key: k, value: v }))
            .join(', ')}`
        : null,
    ]
      .filter(Boolean)
      .join('; '),
    reason: given.reason,
  });
  return { ...run, runTags: await store.getRunTags(run.id) };
}

const actInput = z.strictObject({
  action: z.enum(RUN_ACTIONS as [RunAction, ...RunAction[]], { error: `must be one of ${RUN_ACTIONS.join(', ')}` }),
  runId: runRef,
  reason: reasonField,
});

/**
 * One operator action on one run. The store refuses what the run's status does not allow
 * (InvalidTransitionError) and a run it has no row of (NotFoundError: an outside client's run has no status
 * to move); refused, nothing is written and nothing is audited. `alert`: the alert webhooks' event the action
 * is, written with it (the gateway's pause at a budget).
 */
export async function act(
  deps: ControlDeps,
  caller: Caller,
  input: z.input<typeof actInput>,
  alert?: WebhookEventInput,
): Promise<RunRow> {
  authorize(caller, 'operator');
  const given = validate(actInput, input);
  return actOne(await deps.store(), caller, given, undefined, alert);
}

/**
 * One run's action, its audit lines included, for act() and for bulk actions (lib/control/bulk.ts), whose caller is
 * authorized and whose input is validated already. `note` begins each line (the bulk's filter). A retry that brought
 * back the children its cancel had taken (the store's actOnRun) writes a retry line for each, naming the parent
 * whose retry did.
 */
export async function actOne(
  store: ControlStore,
  caller: Caller,
  given: { action: RunAction; runId: string; reason?: string },
  note?: string,
  alert?: WebhookEventInput,
): Promise<RunRow> {
  const { retriedChildren = [], ...run } = await store.actOnRun(given.runId, given.action, caller.actor, alert);
  await record(store, caller, {
    action: given.action,
    target: given.runId,
    runId: given.runId,
    note,
    reason: given.reason,
  });
  for (const child of retriedChildren)
    await record(store, caller, {
      action: 'retry',
      target: child.runId,
      runId: child.runId,
      note: [note, `with its parent ${child.parentId}`].filter(Boolean).join('; '),
      reason: given.reason,
    });
  return run;
}
const budgetInput = z.strictObject({
  runId: runRef,
  budgetUsd: budgetUsdSchema,
  reason: reasonField,
});

/**
 * Sets a run's budget (USD), raising or lowering it, whatever its status: a run the gateway paused at its
 * budget continues once raised and resumed (docs/gateway.md, "Budgets"). The run's timeline and the audit log
 * say from what to what. NotFoundError for a run with no row (an outside client's run has no budget).
 */
export async function budget(deps: ControlDeps, caller: Caller, input: z.input<typeof budgetInput>): Promise<RunRow> {
  authorize(caller, 'operator');
  const given = validate(budgetInput, input);
  const store = await deps.store();
  const before = await store.getRun(given.runId);
  if (!before) throw new NotFoundError(`run ${given.runId}`);
  const run = await store.setRunBudget(given.runId, given.budgetUsd);
  const change = `budget ${before.budgetUsd === null ? 'none' : `$${before.budgetUsd}`} → $${given.budgetUsd}`;
  await store.recordEvent({ runId: run.id, outcome: 'operator', detail: `${change} by ${caller.actor}` });
  await record(store, caller, { action: 'budget', target: run.id, runId: run.id, note: change, reason: given.reason });
  return run;
}

export { fork, rerun } from './rewind';
