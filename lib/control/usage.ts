/**
 * The usage ledger, read once for the API and the pages: a run's model calls summed in total, by step and by
 * model (lib/gateway/ledger.ts, as `waybill inspect` prints it), one step's calls, and a workflow's total and
 * by model over all its runs (one aggregate read in the store). A viewer may read each. What counts is the
 * ledger's rule: complete calls, retired ones included (they were paid); a call without a price is unpriced.
 */
import { z } from 'zod';
import { NotFoundError } from '../errors';
import { type RunUsage, runUsage, sumUsage, type UsageTotals } from '../gateway/ledger';
import type { ModelApi, ModelUsageRow } from '../store/contract';
import { authorize, type Caller } from './caller';
import { validate } from './errors';
import { runRef, stepField, workflowRef } from './fields';
import { runExists } from './logs';
import type { ControlDeps } from './store';

export type { RunUsage, UsageTotals };

const runInput = z.strictObject({ runId: runRef });
const stepInput = z.strictObject({ runId: runRef, step: stepField });
const workflowInput = z.strictObject({ workflow: workflowRef });

/** The run's ledger; NotFoundError for a run the store knows nothing of. A run without calls answers zeros. */
export async function ofRun(deps: ControlDeps, caller: Caller, input: z.input<typeof runInput>): Promise<RunUsage> {
  authorize(caller, 'viewer');
  const given = validate(runInput, input);
  const store = await deps.store();
  const usage = await runUsage(store, given.runId);
  if (usage.calls === 0 && !(await runExists(store, given.runId))) throw new NotFoundError(`run ${given.runId}`);
  return usage;
}

export interface StepCall {
  id: string;
  api: ModelApi;
  model: string | null;
  /** `pending`: still asking upstream, nothing known of its cost yet. */
  state: 'pending' | 'complete';
  inputTokens: number | null;
  outputTokens: number | null;
  cachedTokens: number | null;
  /** USD; null: unpriced, or not answered yet. */
  costUsd: number | null;
  startedAt: number;
  /** Set when a rerun of the step retired the call: it was paid, and the rerun asked again. */
  retiredAt: number | null;
}

export interface StepUsage {
  runId: string;
  step: number;
  /** The sum of its complete calls. */
  usage: UsageTotals;
  /** Every call made under the step's key, oldest first, pending and retired ones included. */
  calls: StepCall[];
}

/** One step's model calls and their sum: the step page's. No calls is an empty list, not a refusal. */
export async function ofStep(deps: ControlDeps, caller: Caller, input: z.input<typeof stepInput>): Promise<StepUsage> {
  authorize(caller, 'viewer');
  const given = validate(stepInput, input);
  const rows = (await (await deps.store()).listModelCalls({ runId: given.runId })).filter((c) => c.step === given.step);
  const { runId, bySteps: _, byModel: __, ...usage } = sumUsage(given.runId, rows);
  return {
    runId,
    step: given.step,
    usage,
    calls: rows.map((c) => ({
      id: c.id,
      api: c.api,
      model: c.model,
      state: c.state,
      inputTokens: c.inputTokens,
      outputTokens: c.outputTokens,
      cachedTokens: c.cachedTokens,
      costUsd: c.costUsd,
      startedAt: c.startedAt,
      retiredAt: c.retiredAt,
    })),
  };
}

export interface WorkflowUsage extends UsageTotals {
  workflow: string;
  byModel: { model: string | null; usage: UsageTotals }[];
}

/**
 * A workflow's ledger over all its runs; NotFoundError for a name with no run and that nothing can start
 * (neither built in nor published). Outside clients' undeclared runs have no workflow, and are not counted.
 */
export async function ofWorkflow(
  deps: ControlDeps,
  caller: Caller,
  input: z.input<typeof workflowInput>,
): Promise<WorkflowUsage> {
  authorize(caller, 'viewer');
  const given = validate(workflowInput, input);
  const store = await deps.store();
  const rows = await store.sumModelCalls({ workflow: given.workflow });
  if (rows.length === 0 && !(await workflowKnown(deps, given.workflow)))
    throw new NotFoundError(`workflow ${given.workflow}`);
  const total = totalOf(rows);
  return {
    workflow: given.workflow,
    ...total,
    byModel: rows.map(({ model, ...usage }) => ({ model, usage })),
  };
}

function totalOf(rows: ModelUsageRow[]): UsageTotals {
  const total: UsageTotals = { calls: 0, inputTokens: 0, outputTokens: 0, cachedTokens: 0, costUsd: 0, unpriced: 0 };
  for (const row of rows) {
    total.calls += row.calls;
    total.inputTokens += row.inputTokens;
    total.outputTokens += row.outputTokens;
    total.cachedTokens += row.cachedTokens;
    total.costUsd += row.costUsd;
    total.unpriced += row.unpriced;
  }
  return total;
}

async function workflowKnown(deps: ControlDeps, workflow: string): Promise<boolean> {
  const store = await deps.store();
  const [run] = await store.listRuns({ workflow, limit: 1, claimTtlMs: deps.claimTtlMs });
  if (run) return true;
  return deps.workflows ? (await deps.workflows(store)).names().includes(workflow) : false;
}
