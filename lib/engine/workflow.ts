/**
 * Workflows are plain async functions over a RunContext, registered by name. The input schema is the
 * contract at the boundary: a run is only created with input that parses.
 */
import type { z } from 'zod';
import { budgetProblem } from '../domain/budget';
import {
  type LimitKeyProblem,
  limitKeyProblem,
  limitsHold,
  type RunLimits,
  resolveLimits,
  runLimitsSchema,
} from '../domain/run-limits';
import { InvalidInputError, NotFoundError } from '../errors';
import type { RunContext } from './context';
import { eventNameProblem } from './events';
import { checkInput, type InputIssue, inputError } from './input-check';
import { checkRetryPolicy, type RetryPolicy } from './retry-policy';
import { type ScheduleDeclaration, scheduleFields, scheduleIssues } from './schedules/spec';

export interface WorkflowDefinition<I = unknown> {
  name: string;
  /** One line for the start form and the CLI. */
  description?: string;
  /** The code version the author gives (a git sha, a semver): published with the workflow, shown beside it. */
  version?: string;
  input: z.ZodType<I>;
  /** Attempts per step before the run fails. Default 3. The same as retry.maxAttempts, which wins when both are given. */
  maxAttempts?: number;
  /** Every step's retry policy, unless the step gives its own fields (ctx.step's options win field by field). */
  retry?: RetryPolicy;
  /**
   * How many steps a run has, when known up front: drives progress bars and ETAs. A number is published and
   * the control plane can use it; a function of the input only the worker's own code can evaluate.
   */
  totalSteps?: number | ((input: I) => number | null);
  /**
   * USD a run may spend on model calls through the gateway before its next call is refused and the run paused
   * (docs/gateway.md, "Budgets"). A start may give its own; the worker fills this in for a run started without.
   */
  budgetUsd?: number;
  /**
   * Starts of this workflow on cron expressions, kept in the store when a worker serving it starts (see
   * docs/guide.md, "Schedules"). Each input is parsed by `input` then.
   */
  schedules?: ScheduleDeclaration[];
  /** Event names that each start one run of it per event id, with the event's data as input (lib/engine/events.ts). */
  on?: string[];
  /**
   * At most `limit` runs of it running at once per key, across every worker of the store: `key` is a path into
   * the input ("customer"), or absent for one key over all its runs. A parked run holds no place.
   */
  concurrency?: { limit: number; key?: string };
  /** At most `limit` runs of it started per period (second, minute, hour or ms) per key, the same way. */
  rateLimit?: { limit: number; period: 'second' | 'minute' | 'hour' | number; key?: string };
  /** The priority of its runs started without their own (higher is picked first; 0 by default). */
  priority?: number;
  run(ctx: RunContext, input: I): Promise<unknown>;
}

/**
 * Marks what defineWorkflow returned, so a module's other exports (helpers, constants) are told apart from
 * its workflows. Symbol.for: the user's module may load another copy of this file than the worker does.
 */
const WORKFLOW = Symbol.for('waybill.workflow');

const NAME = /^[a-z][a-z0-9-]{0,63}$/;

export function defineWorkflow<I>(definition: WorkflowDefinition<I>): WorkflowDefinition<I> {
  const label = JSON.stringify(definition?.name);
  if (typeof definition?.name !== 'string' || !NAME.test(definition.name)) {
    throw new InvalidInputError(`workflow name ${label} must be lowercase letters, digits and dashes, at most 64`);
  }
  if (typeof definition.input?.safeParse !== 'function')
    throw new InvalidInputError(`workflow ${label}: input must be a zod schema`);
  if (typeof definition.run !== 'function') throw new InvalidInputError(`workflow ${label}: run must be a function`);
  const { totalSteps, version, description } = definition;
  if (typeof totalSteps === 'number' && !(Number.isInteger(totalSteps) && totalSteps >= 0)) {
    throw new InvalidInputError(
      `workflow ${label}: totalSteps must be a whole number of steps or a function of the input`,
    );
  }
  if (version !== undefined && (typeof version !== 'string' || version.length === 0 || version.length > 100)) {
    throw new InvalidInputError(`workflow ${label}: version must be a string of 1 to 100 characters`);
  }
  if (description !== undefined && (typeof description !== 'string' || description.length > 1000)) {
    throw new InvalidInputError(`workflow ${label}: description must be a string of at most 1000 characters`);
  }
  const budget = definition.budgetUsd === undefined ? undefined : budgetProblem('budgetUsd', definition.budgetUsd);
  if (budget !== undefined) throw new InvalidInputError(`workflow ${label}: ${budget}`);
  if (definition.maxAttempts !== undefined)
    checkRetryPolicy({ maxAttempts: definition.maxAttempts }, '', `workflow ${label}`);
  // Refused here, at import, rather than at the first failing step of some run hours later.
  if (definition.retry !== undefined) checkRetryPolicy(definition.retry, 'retry', `workflow ${label}`);
  if (definition.schedules !== undefined) {
    if (!Array.isArray(definition.schedules))
      throw new InvalidInputError(`workflow ${label}: schedules must be an array`);
    definition.schedules.forEach((declared, i) => {
      const checked = scheduleFields.safeParse(declared);
      if (!checked.success)
        throw new InvalidInputError(`workflow ${label}: schedules[${i}]: ${scheduleIssues(checked.error)}`);
    });
  }
  if (definition.on !== undefined) {
    if (!Array.isArray(definition.on))
      throw new InvalidInputError(`workflow ${label}: on must be an array of event names`);
    definition.on.forEach((name, i) => {
      const problem = eventNameProblem(name);
      if (problem) throw new InvalidInputError(`workflow ${label}: on[${i}] ${problem}`);
    });
  }
  const limits = runLimitsSchema.safeParse({
    concurrency: definition.concurrency,
    rateLimit: definition.rateLimit,
    priority: definition.priority,
  });
  if (!limits.success) {
    const issue = limits.error.issues[0]!;
    throw new InvalidInputError(`workflow ${label}: ${issue.path.join('.')} ${issue.message}`);
  }
  Object.defineProperty(definition, WORKFLOW, { value: true });
  return definition;
}

export function isWorkflowDefinition(value: unknown): value is WorkflowDefinition<unknown> {
  return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[WORKFLOW] === true;
}

/** Its concurrency limit, rate limit and default priority, as the pick and the published row hold them. */
export function limitsOf(definition: AnyWorkflowDefinition): RunLimits {
  return resolveLimits(
    runLimitsSchema.parse({
      concurrency: definition.concurrency,
      rateLimit: definition.rateLimit,
      priority: definition.priority,
    }),
  );
}

/** The steps a run of this input has, when the definition can say. */
export function stepsOf<I>(definition: WorkflowDefinition<I>, input: I): number | null {
  const { totalSteps } = definition;
  return typeof totalSteps === 'function' ? totalSteps(input) : (totalSteps ?? null);
}

/**
 * The worker's half of totalSteps: a run queued without a total (by a control plane that could not evaluate
 * a function of the input) gets it from the worker that has the code, as soon as it takes the run.
 */
export async function fillRunTotal(
  store: { setRunTotal(id: string, workerId: string, totalSteps: number): Promise<void> },
  run: { id: string; totalSteps: number | null },
  workerId: string,
  definition: WorkflowDefinition<unknown>,
  input: unknown,
): Promise<void> {
  if (run.totalSteps !== null) return;
  const total = stepsOf(definition, input);
  // The total only draws progress bars: a store that fails to take it must not fail the run (the next take retries).
  if (total !== null) await store.setRunTotal(run.id, workerId, total).catch(() => undefined);
}

/**
 * The worker's half of budgetUsd: the control plane may not have the code, so a run started without a budget of
 * its own gets its workflow's default from the worker that takes it, once (a budget set meanwhile wins).
 */
export async function fillRunBudget(
  store: { setRunBudget(id: string, budgetUsd: number, options: { ifUnset: true }): Promise<unknown> },
  run: { id: string; budgetUsd: number | null },
  definition: WorkflowDefinition<unknown>,
): Promise<void> {
  // Not caught, unlike the total: a run whose budget could not be set must not spend unbounded.
  if (run.budgetUsd === null && definition.budgetUsd !== undefined)
    await store.setRunBudget(run.id, definition.budgetUsd, { ifUnset: true });
}

/**
 * A definition of whichever input, as a registry holds many. WorkflowDefinition is invariant in its input (its
 * schema gives one, totalSteps takes one), so neither WorkflowDefinition<unknown> nor <never> admits them all.
 * Sound as used: the registry hands a definition only what its own schema parsed.
 */
// biome-ignore lint/suspicious/noExplicitAny: TypeScript has no "for some I"; any is the one input every definition is assignable through
export type AnyWorkflowDefinition = WorkflowDefinition<any>;

/**
 * The answer to "may a run of this workflow start with this input?": the input to store, or each problem.
 * `limitKey`: the input fits the schema but gives no key one of the workflow's limits can hold it by; its one
 * issue says so too, for a caller that reads issues only. startRefusal words either.
 */
export type StartCheck =
  | { ok: true; workflow: string; input: unknown; totalSteps: number | null; priority?: number }
  | { ok: false; issues: InputIssue[]; limitKey?: LimitKeyProblem };

/**
 * The refusal of a start by its schema's check, then by its limits' keys: the one place the two implementations
 * of StartableWorkflows.check (a registry's code, a catalog's published rows) meet, so each start path refuses
 * an unkeyable input however it reached its workflow.
 */
export function startCheck(
  name: string,
  checked: ReturnType<typeof checkInput>,
  limits: RunLimits,
  started: (input: unknown) => { totalSteps: number | null; priority?: number },
): StartCheck {
  if (!checked.ok) return checked;
  const limitKey = limitKeyProblem(name, limits, checked.input);
  if (limitKey) return { ok: false, issues: [{ path: limitKey.path.split('.'), message: limitKey.field }], limitKey };
  return { ok: true, workflow: name, input: checked.input, ...started(checked.input) };
}

/** A refused check as the engine raises it: the limit key's own words, or each field the schema refused. */
export function startRefusal(name: string, refused: Extract<StartCheck, { ok: false }>): InvalidInputError {
  return refused.limitKey ? new InvalidInputError(refused.limitKey.message) : inputError(name, refused.issues);
}

/** What starting a run needs: the registry (code at hand) or the published catalog (the control plane). */
export interface StartableWorkflows {
  names(): string[];
  /** Undefined for a name it does not know. */
  check(name: string, input: unknown): StartCheck | undefined;
}

export class WorkflowRegistry implements StartableWorkflows {
  private readonly byName = new Map<string, WorkflowDefinition<unknown>>();

  constructor(definitions: AnyWorkflowDefinition[] = []) {
    for (const definition of definitions) this.register(definition);
  }

  register(definition: AnyWorkflowDefinition): this {
    if (this.byName.has(definition.name))
      throw new InvalidInputError(`workflow ${definition.name} is registered twice`);
    this.byName.set(definition.name, definition);
    return this;
  }

  has(name: string): boolean {
    return this.byName.has(name);
  }

  get(name: string): WorkflowDefinition<unknown> {
    const definition = this.byName.get(name);
    if (!definition) throw new NotFoundError(`workflow ${JSON.stringify(name)} (known: ${this.names().join(', ')})`);
    return definition;
  }

  names(): string[] {
    return [...this.byName.keys()];
  }

  definitions(): WorkflowDefinition<unknown>[] {
    return [...this.byName.values()];
  }

  /** The limits of the workflows that declare any, by name: what the worker's pick holds runs back by. */
  limits(): Record<string, RunLimits> {
    const limits: Record<string, RunLimits> = {};
    for (const definition of this.byName.values()) {
      const own = limitsOf(definition);
      if (limitsHold(own)) limits[definition.name] = own;
    }
    return limits;
  }

  check(name: string, input: unknown): StartCheck | undefined {
    const definition = this.byName.get(name);
    if (!definition) return undefined;
    return startCheck(name, checkInput(definition.input, input), limitsOf(definition), (parsed) => ({
      totalSteps: stepsOf(definition, parsed),
      priority: definition.priority,
    }));
  }

  /** Parses input against the workflow's schema; the error names each wrong field by its path. */
  parseInput(name: string, input: unknown): unknown {
    const checked = checkInput(this.get(name).input, input);
    if (checked.ok) return checked.input;
    throw inputError(name, checked.issues);
  }
}
