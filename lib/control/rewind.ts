/**
 * Rewinding runs: rerun from a step and fork from a step, for the dashboard, the API and the CLI alike.
 *
 * How the others do it, and what we keep. Temporal's Reset makes a NEW run of the workflow whose history is
 * the old one's cut at an event, and terminates the old run; DBOS's fork starts a new workflow id that
 * copies the original's checkpointed steps before a step and re-executes from there. Both rely on a
 * deterministic replay of the history to rebuild the state at the cut. Waybill's runs resume from progress
 * and skip committed keys, so a rerun can stay the SAME run: its committed results from step N on move (one
 * transaction, never deleted) to committed_history, progress returns to N, and the run is queued. The rerun's
 * steps get the same idempotency keys as before — the key is what is processed, and an external service
 * that deduplicates on it would otherwise see new work as old — and the claim/commit SQL needs no change:
 * it checks only `committed`, where the key no longer is. Refusing while any claim is live and deleting the
 * orphaned ones in that transaction fences every worker of the earlier execution: without a claim it can
 * never commit. A fork is DBOS's: a new run id, so new keys (`<run>:step:<n>` with the fork's id), its steps
 * before N copied as `forked` rows that name the key they came from; the original is not written at all.
 *
 * A rewind starts from a step number (committed.step): a step without one cannot be chosen, and stands where it
 * ran, moved by a rerun and left out of a fork when it ran after step N's first commit, kept and copied when
 * before (store/shared/rewind.ts fromN). A child's start is such a step: a rerun from before it lets the child
 * go and starts a new one, a fork from after it keeps the child and waits on it. A fork copies the decisions its
 * copied steps read too (approvals, signals, events, sleeps decided before N: copyWaits), so it asks no one again.
 * A step may be named instead (`fetch-3`: ctx.step's name, the key's tail after `<run>:`, or a whole key): it
 * stands for the lowest step number recorded under that key.
 *
 * State. A workflow of named steps replays: its run() starts from the top and each committed step returns its
 * result, so its state is rebuilt from the results < N with nothing else to restore. A loop that resumes from
 * its saved progress (runAgent, a Checkpoint loop, an HTTP client) keeps its state there; each commit copies
 * that progress as it stood (committed.prior_*), and a rewind from N puts back the copy of the first row from
 * N on — the state as it was when N was first reached, not the latest (store/shared/rewind.ts).
 */
import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import { runIdSchema } from '../engine/runs';
import { RewindRefusedError, StartRefusedError } from '../errors';
import { type RewindCost, rewindCost } from '../gateway/rewind-cost';
import type { LetGoChild, RewindOutcome } from '../store/contract';
import { record } from './audit';
import { authorize, type Caller } from './caller';
import { validate } from './errors';
import { reasonField, runRef } from './fields';
import { startRefused } from './input-refusal';
import type { ControlDeps, ControlStore } from './store';

const stepNumber = z
  .number({ error: 'must be a step number or a step name' })
  .int('must be a whole number')
  .min(0, 'must be 0 or more')
  .max(Number.MAX_SAFE_INTEGER, 'is too large');

/**
 * A step by number, or by name: digits are a number (so a CLI flag or a form field passes either as text); any
 * other text a name or a whole key, bounded as keys are.
 */
export const stepText = z
  .string({ error: 'must be a step number or a step name' })
  .trim()
  .min(1, 'must not be empty')
  .max(512, 'must be at most 512 characters')
  .refine((s) => !/\p{Cc}/u.test(s), 'must not contain control characters')
  // A number that is not a step (-1, 1.5, 1e3) is a mistake, not a name.
  .refine(
    (s) => /^\d{1,15}$/.test(s) || !/^[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/i.test(s),
    'must be a whole number, 0 or more (or a step name)',
  )
  .transform((s): number | string => (/^\d{1,15}$/.test(s) ? Number(s) : s));
export const stepRef = z.union([stepNumber, stepText], {
  // The rule of the branch the value's type chose ("must be 0 or more", "must not be empty"), not "invalid input".
  error: (issue) => {
    if (issue.code !== 'invalid_union') return undefined;
    const branch = typeof issue.input === 'number' ? 0 : typeof issue.input === 'string' ? 1 : -1;
    return issue.errors[branch]?.[0]?.message ?? 'must be a step number or a step name';
  },
});
const fromStep = stepRef;

const rerunInput = z.strictObject({
  runId: runRef,
  fromStep,
  input: z.unknown().optional(),
  reason: reasonField,
});

const costInput = z.strictObject({ runId: runRef, fromStep });

const forkInput = z.strictObject({
  runId: runRef,
  fromStep,
  id: runIdSchema.optional(),
  input: z.unknown().optional(),
  reason: reasonField,
});

/** The edited input checked against the run's workflow (built-in or published), as a start checks it. */
async function checkedInput(deps: ControlDeps, store: ControlStore, runId: string, input: unknown) {
  if (input === undefined) return { inputJson: null, totalSteps: undefined };
  const run = await store.getRun(runId);
  if (!run) return { inputJson: null, totalSteps: undefined }; // the store refuses it as having no row
  if (!deps.workflows) throw new Error('lib/control rewind: no workflows given');
  const workflows = await deps.workflows(store);
  const checked = workflows.check(run.workflow, input);
  if (!checked) {
    const message = `run ${runId}'s workflow ${JSON.stringify(run.workflow)} is not known here, so an edited input cannot be checked`;
    throw new StartRefusedError(run.workflow, 'unknown-workflow', message, { input: [message] });
  }
  if (!checked.ok) throw startRefused(run.workflow, checked);
  return { inputJson: JSON.stringify(checked.input), totalSteps: checked.totalSteps };
}

/**
 * The step number a rerun or fork starts from: a number as given; a name resolved in the run (`<run>:<name>`,
 * or the name as a whole key). RewindRefusedError on `fromStep` when nothing is recorded under it, or only
 * keyless rows (a ctx.step with no { step }).
 */
export async function resolveStep(store: ControlStore, runId: string, ref: number | string): Promise<number> {
  if (typeof ref === 'number') return ref;
  const keys = ref.startsWith(`${runId}:`) ? [ref] : [`${runId}:${ref}`, ref];
  const { found, step } = await store.stepOfKeys(runId, keys);
  if (!found) {
    throw new RewindRefusedError(
      'step',
      `fromStep ${JSON.stringify(ref)}: run ${runId} has no step of that name (nothing recorded under ${keys.map((k) => JSON.stringify(k)).join(' or ')})`,
    );
  }
  if (step === null) {
    throw new RewindRefusedError(
      'step',
      `fromStep ${JSON.stringify(ref)}: that step of run ${runId} has no step number (ctx.step without { step }), and a rerun starts from a numbered step`,
    );
  }
  return step;
}

/** `step 3` or `step 3 (fetch-3)`: what the audit line and the answers call the step. */
const stepLabel = (n: number, ref: number | string) => (typeof ref === 'number' ? `step ${n}` : `step ${n} (${ref})`);

/** What a rewind did to the run's saved state, and to its children, for the audit line. */
function rewindNote(outcome: RewindOutcome, children: 'let go' | 'kept'): string {
  const state =
    outcome.state === 'restored'
      ? `, state as it was at step ${outcome.stateStep}`
      : outcome.state === 'kept'
        ? ', state kept as it is (none recorded at that step)'
        : '';
  return outcome.children.length === 0 ? state : `${state}, children ${children}: ${outcome.children.join(', ')}`;
}

/**
 * One run's rerun, its audit line included, for rerun() and for bulk reruns (lib/control/bulk.ts), whose caller
 * is authorized and whose input is validated already. `note` prefixes the audit line (the bulk's filter).
 */
export async function rerunOne(
  deps: ControlDeps,
  store: ControlStore,
  caller: Caller,
  given: { runId: string; fromStep: number | string; input?: unknown; reason?: string },
  note?: string,
): Promise<RewindOutcome & { fromStep: number }> {
  return rerunAt(deps, store, caller, given, await resolveStep(store, given.runId, given.fromStep), note);
}

async function rerunAt(
  deps: ControlDeps,
  store: ControlStore,
  caller: Caller,
  given: { runId: string; fromStep: number | string; input?: unknown; reason?: string },
  n: number,
  note?: string,
): Promise<RewindOutcome & { fromStep: number }> {
  const edited = await checkedInput(deps, store, given.runId, given.input);
  const outcome = await store.rerunRun({
    runId: given.runId,
    fromStep: n,
    ...edited,
    actor: caller.actor,
    reason: given.reason ?? null,
    claimTtlMs: deps.claimTtlMs,
  });
  await record(store, caller, {
    action: 'rerun',
    target: given.runId,
    runId: given.runId,
    reason: given.reason,
    note: `${note ? `${note}: ` : ''}rerun ${outcome.rerun} from ${stepLabel(n, given.fromStep)}: ${outcome.moved} results moved to history${edited.inputJson ? ', input edited' : ''}${rewindNote(outcome, 'let go')}`,
  });
  return { ...outcome, fromStep: n };
}

/**
 * What the steps a rerun or fork from N would redo cost the last time they ran (lib/gateway/rewind-cost.ts),
 * for the dialogs, the preview route and `--dry-run`. A read: viewer; the step is resolved as the rewind
 * resolves it, and refused as it refuses it (beyond the last step, a run with no row).
 */
export async function cost(deps: ControlDeps, caller: Caller, input: z.input<typeof costInput>): Promise<RewindCost> {
  return (await costAt(deps, caller, input)).lastCost;
}

/** cost's read, with the store and the step it resolved to, which the rerun's preview reads on from. */
async function costAt(deps: ControlDeps, caller: Caller, input: z.input<typeof costInput>) {
  authorize(caller, 'viewer');
  const given = validate(costInput, input);
  const store = await deps.store();
  const n = await resolveStep(store, given.runId, given.fromStep);
  return { store, runId: given.runId, fromStep: n, lastCost: await rewindCost(store, given.runId, n) };
}

/** What a rerun from N would do, said before it does it: its last cost, and the child runs it would let go. */
export interface RerunPreview {
  fromStep: number;
  lastCost: RewindCost;
  letGo: LetGoChild[];
}

/**
 * The rerun's preview, for its dialog, `GET /api/v1/runs/{id}/rerun-preview` and `waybill rerun --dry-run`. The
 * children are the rerun's own set (store.rerunLetGo runs the rule rerunRun runs), so the preview names those it
 * then lets go, and is refused as it is (a child still running). A read: viewer.
 */
export async function rerunPreview(
  deps: ControlDeps,
  caller: Caller,
  input: z.input<typeof costInput>,
): Promise<RerunPreview> {
  const { store, runId, fromStep, lastCost } = await costAt(deps, caller, input);
  return { fromStep, lastCost, letGo: await store.rerunLetGo(runId, fromStep) };
}

/** A rewind's answer: what it did, and what the steps it redoes cost before (read before they moved). */
export type Rewound = RewindOutcome & { fromStep: number; lastCost: RewindCost };

/** Reruns a finished, failed, cancelled or paused run from step N (see the top comment). Operator only; audited. */
export async function rerun(deps: ControlDeps, caller: Caller, input: z.input<typeof rerunInput>): Promise<Rewound> {
  authorize(caller, 'operator');
  const given = validate(rerunInput, input);
  const store = await deps.store();
  const n = await resolveStep(store, given.runId, given.fromStep);
  const lastCost = await rewindCost(store, given.runId, n);
  return { ...(await rerunAt(deps, store, caller, given, n)), lastCost };
}

/** A new run from run R's step N: steps < N copied as committed, the rest run anew; R is not written. */
export async function fork(deps: ControlDeps, caller: Caller, input: z.input<typeof forkInput>): Promise<Rewound> {
  authorize(caller, 'operator');
  const given = validate(forkInput, input);
  const store = await deps.store();
  const n = await resolveStep(store, given.runId, given.fromStep);
  const lastCost = await rewindCost(store, given.runId, n);
  const edited = await checkedInput(deps, store, given.runId, given.input);
  const newId = given.id ?? `${given.runId.slice(0, 100)}-fork-${randomBytes(3).toString('hex')}`;
  const outcome = await store.forkRun({
    runId: given.runId,
    fromStep: n,
    newId,
    ...edited,
    actor: caller.actor,
    claimTtlMs: deps.claimTtlMs,
  });
  await record(store, caller, {
    action: 'fork',
    target: given.runId,
    runId: given.runId,
    reason: given.reason,
    note: `forked as ${newId} from ${stepLabel(n, given.fromStep)}: ${outcome.moved} results copied${edited.inputJson ? ', input edited' : ''}${rewindNote(outcome, 'kept')}`,
  });
  return { ...outcome, fromStep: n, lastCost };
}
