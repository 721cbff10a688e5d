'use server';
/**
 * Webhook mutations from the webhooks page: pause, resume, and resend a delivery. Thin: the caller is checked
 * first, then lib/control/webhooks decides, writes and audits; the page and the audit refresh.
 */
import { revalidatePath } from 'next/cache';
import { webhooks } from '@/lib/control';
import { controlDeps } from '@/lib/data/control';
import { type ActionResult, failure, operatorCaller } from './result';

export async function setWebhookPausedAction(input: { id: string; paused: boolean }): Promise<ActionResult> {
  const caller = await operatorCaller();
  try {
    await webhooks.setPaused(controlDeps(), caller, input.paused === true, { id: input.id });
  } catch (error) {
    return failure(error);
  }
  revalidatePath('/webhooks');
  revalidatePath('/audit');
  return { ok: true, message: `${input.paused ? 'paused' : 'resumed'} webhook ${input.id}` };
}

export async function resendDeliveryAction(input: { id: string }): Promise<ActionResult> {
  const caller = await operatorCaller();
  try {
    await webhooks.resend(controlDeps(), caller, { id: input.id });
  } catch (error) {
    return failure(error);
  }
  revalidatePath('/webhooks');
  revalidatePath('/audit');
  return { ok: true, message: `re-sending ${input.id}` };
}
