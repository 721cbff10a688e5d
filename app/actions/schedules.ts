'use server';
/**
 * Schedule mutations from the schedules page: pause and resume. Thin: the caller is checked first, then
 * lib/control/schedules decides, writes and audits; the pages that show schedules and the audit refresh.
 */
import { revalidatePath } from 'next/cache';
import { schedules } from '@/lib/control';
import { controlDeps } from '@/lib/data/control';
import { type ActionResult, failure, operatorCaller } from './result';

export async function setSchedulePausedAction(input: { name: string; paused: boolean }): Promise<ActionResult> {
  const caller = await operatorCaller();
  try {
    await schedules.setPaused(controlDeps(), caller, input.paused === true, { name: input.name });
  } catch (error) {
    return failure(error);
  }
  revalidatePath('/schedules');
  revalidatePath('/audit');
  return { ok: true, message: `${input.paused ? 'paused' : 'resumed'} schedule ${input.name}` };
}
