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

/** The add form's fields as typed: the URL, the events ticked, and the in-doubt threshold's text. */
export interface WebhookForm {
  url: string;
  events: string[];
  inDoubtSeconds: string;
}

/**
 * Adds a subscription; its signing secret is answered once, here, for the operator to copy into the receiver
 * (later views show only its last four characters).
 */
export async function addWebhookAction(form: WebhookForm): Promise<ActionResult<{ id: string; secret: string }>> {
  const caller = await operatorCaller();
  const threshold = typeof form?.inDoubtSeconds === 'string' ? form.inDoubtSeconds.trim() : '';
  try {
    const added = await webhooks.add(controlDeps(), caller, {
      url: typeof form?.url === 'string' ? form.url.trim() : (form?.url as unknown as string),
      events: form?.events as never,
      // Text that is not a whole number is the operation's to refuse, by its own words.
      inDoubtSeconds: threshold === '' ? undefined : /^\d+$/.test(threshold) ? Number(threshold) : (threshold as never),
    });
    revalidatePath('/webhooks');
    revalidatePath('/audit');
    return { ok: true, message: `added webhook ${added.id}`, data: { id: added.id, secret: added.secret } };
  } catch (error) {
    return failure(error);
  }
}

export async function deleteWebhookAction(input: { id: string; reason?: string }): Promise<ActionResult> {
  const caller = await operatorCaller();
  try {
    await webhooks.remove(controlDeps(), caller, { id: input?.id, reason: input?.reason });
  } catch (error) {
    return failure(error);
  }
  revalidatePath('/webhooks');
  revalidatePath('/audit');
  return { ok: true, message: `deleted webhook ${input.id}` };
}
