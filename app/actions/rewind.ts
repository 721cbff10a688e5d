'use server';
/**
 * Rerun and fork from a step, from the run page's confirm dialogs. Thin: the caller is checked first, the
 * input text parsed, and lib/control/rewind decides, validates, writes and audits.
 */
import { revalidatePath } from 'next/cache';
import { rewind } from '@/lib/control';
import { controlDeps } from '@/lib/data/control';
import { type ActionResult, failure, jsonField, operatorCaller } from './result';

interface RewindInput {
  runId: string;
  /** A step number, or a step's name (lib/control/rewind resolves it). */
  fromStep: number | string;
  /** The edited input as JSON text; empty keeps the run's. */
  input?: string;
  reason?: string;
  /** A fork's new run id; none: lib/control/rewind names it. */
  id?: string;
}

function refresh(...ids: string[]) {
  revalidatePath('/');
  revalidatePath('/audit');
  for (const id of ids) revalidatePath(`/runs/${encodeURIComponent(id)}`);
}

export async function rerunAction(given: RewindInput): Promise<ActionResult<{ id: string }>> {
  const caller = await operatorCaller();
  const input = jsonField('input', given.input ?? '', undefined);
  if (!input.ok) return input.result;
  try {
    const outcome = await rewind.rerun(controlDeps(), caller, {
      runId: given.runId,
      fromStep: given.fromStep,
      input: input.value,
      reason: given.reason,
    });
    refresh(given.runId);
    return {
      ok: true,
      message: `rerun ${outcome.rerun} from step ${outcome.fromStep}: ${outcome.moved} results moved to history${outcome.state === 'restored' ? `, state as it was at step ${outcome.stateStep}` : ''}; the run is queued`,
      data: { id: given.runId },
    };
  } catch (error) {
    return failure(error);
  }
}

export async function forkAction(given: RewindInput): Promise<ActionResult<{ id: string }>> {
  const caller = await operatorCaller();
  const input = jsonField('input', given.input ?? '', undefined);
  if (!input.ok) return input.result;
  try {
    const outcome = await rewind.fork(controlDeps(), caller, {
      runId: given.runId,
      fromStep: given.fromStep,
      id: given.id,
      input: input.value,
      reason: given.reason,
    });
    refresh(given.runId, outcome.run.id);
    return {
      ok: true,
      message: `forked as ${outcome.run.id}: ${outcome.moved} results copied`,
      data: { id: outcome.run.id },
    };
  } catch (error) {
    return failure(error);
  }
}
