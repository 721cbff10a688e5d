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
 * Rerun is pinned to what has a step number (committed.step): a keyless step cannot be chosen and is kept.
 */
import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import { StartRefusedError } from '../errors';
import { issuePath } from '../engine/input-check';
import { runIdSchema } from '../engine/runs';
import type { RewindOutcome } from '../store/types';
import { record } from './audit';
import { authorize, type Caller } from './caller';
import { validate } from './errors';
import { reasonField, runRef } from './fields';
import type { ControlDeps, ControlStore } from './store';

const fromStep = z
  .number({ error: 'must be a step number' })
  .int('must be a whole number')
  .min(0, 'must be 0 or more')
  .max(Number.MAX_SAFE_INTEGER, 'is too large');

const rerunInput = z.strictObject({
  runId: runRef,
  fromStep,
  input: z.unknown().optional(),
  reason: reasonField,
});

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
  if (!checked.ok) {
    const fields = new Map<string, string[]>();
    for (const issue of checked.issues) {
      const name = issue.path.length ? `input.${issuePath(issue)}` : 'input';
      fields.set(name, [...(fields.get(name) ?? []), issue.message]);
    }
    const [first, messages] = [...fields][0]!;
    throw new StartRefusedError(
      run.workflow,
      'input',
      `input does not match ${run.workflow}'s schema: ${first}: ${messages[0]}`,
      Object.fromEntries(fields),
      checked.issues,
    );
  }
  return { inputJson: JSON.stringify(checked.input), totalSteps: checked.totalSteps };
}

/** Reruns a finished, failed, cancelled or paused run from step N (see the top comment). Operator only; audited. */
export async function rerun(
  deps: ControlDeps,
  caller: Caller,
  input: z.input<typeof rerunInput>,
): Promise<RewindOutcome> {
  authorize(caller, 'operator');
  const given = validate(rerunInput, input);
  const store = await deps.store();
  const edited = await checkedInput(deps, store, given.runId, given.input);
  const outcome = await store.rerunRun({
    runId: given.runId,
    fromStep: given.fromStep,
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
    note: `rerun ${outcome.rerun} from step ${given.fromStep}: ${outcome.moved} results moved to history${edited.inputJson ? ', input edited' : ''}`,
  });
  return outcome;
}

/** A new run from run R's step N: steps < N copied as committed, the rest run anew; R is not written. */
export async function fork(
  deps: ControlDeps,
  caller: Caller,
  input: z.input<typeof forkInput>,
): Promise<RewindOutcome> {
  authorize(caller, 'operator');
  const given = validate(forkInput, input);
  const store = await deps.store();
  const edited = await checkedInput(deps, store, given.runId, given.input);
  const newId = given.id ?? `${given.runId.slice(0, 100)}-fork-${randomBytes(3).toString('hex')}`;
  const outcome = await store.forkRun({
    runId: given.runId,
    fromStep: given.fromStep,
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
    note: `forked as ${newId} from step ${given.fromStep}: ${outcome.moved} results copied${edited.inputJson ? ', input edited' : ''}`,
  });
  return outcome;
}
