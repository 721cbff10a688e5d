'use server';
/**
 * Approve or reject a run's waitForApproval from its run page. Thin: lib/control/waits decides once, writes
 * the timeline event and the audit line; a second decision (or the loser of two at one instant) comes back
 * as its message ("already decided by …"), never applied twice.
 */
import { revalidatePath } from 'next/cache';
import { waits } from '@/lib/control';
import { controlDeps } from '@/lib/data/control';
import { type ActionResult, failure, operatorCaller } from './result';

export async function decideWait(input: {
  runId: string;
  name: string;
  approve: boolean;
  note?: string;
}): Promise<ActionResult> {
  const caller = await operatorCaller();
  try {
    const wait = await waits.decide(controlDeps(), caller, {
      runId: input.runId,
      name: input.name,
      approve: input.approve,
      note: input.note || undefined,
    });
    revalidatePath('/');
    revalidatePath('/audit');
    revalidatePath(`/runs/${encodeURIComponent(input.runId)}`);
    return { ok: true, message: `${input.approve ? 'approved' : 'rejected'} ${wait.name}: the run goes on` };
  } catch (error) {
    return failure(error);
  }
}
