'use server';
/**
 * Rerun and fork from a step, from the run page's confirm dialogs. Thin: the caller is checked first, the
 * input text parsed, and lib/control/rewind decides, validates, writes and audits.
 */
import { revalidatePath } from 'next/cache';
import { config } from '@/lib/config';
import { rewind } from '@/lib/control';
import { controlDeps } from '@/lib/data/control';
import { failure, operatorCaller, sizeError, type ActionResult } from './result';

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

function parseInput(
  text: string | undefined,
): { ok: true; value: unknown } | { ok: false; result: ActionResult<never> } {
  if (!text?.trim()) return { ok: true, value: undefined };
  const tooLarge = sizeError('input', text, config().WAYBILL_MAX_BODY_BYTES);
  if (tooLarge)
    return { ok: false, result: { ok: false, message: 'the input is too large', errors: { input: [tooLarge] } } };
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch (error) {
    return {
      ok: false,
      result: {
        ok: false,
        message: 'the input is not valid JSON',
        errors: { input: [`not valid JSON: ${(error as Error).message}`] },
      },
    };
  }
}

function refresh(...ids: string[]) {
  revalidatePath('/');
  revalidatePath('/audit');
  for (const id of ids) revalidatePath(`/runs/${encodeURIComponent(id)}`);
}

export async function rerunAction(given: RewindInput): Promise<ActionResult<{ id: string }>> {
  const caller = await operatorCaller();
  const input = parseInput(given.input);
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
  const input = parseInput(given.input);
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
