'use server';
/**
 * Schedule mutations from the schedules page: add, pause, resume and delete. Thin: the caller is checked first,
 * the form's text is read into the spec's fields, then lib/control/schedules decides, writes and audits; the
 * pages that show schedules and the audit refresh.
 */
import { revalidatePath } from 'next/cache';
import { schedules } from '@/lib/control';
import { controlDeps } from '@/lib/data/control';
import { type ActionResult, failure, jsonField, operatorCaller } from './result';

export async function setSchedulePausedAction(input: { name: string; paused: boolean }): Promise<ActionResult> {
  const caller = await operatorCaller();
  try {
    await schedules.setPaused(controlDeps(), caller, input.paused === true, { name: input.name });
  } catch (error) {
    return failure(error);
  }
  revalidate();
  return { ok: true, message: `${input.paused ? 'paused' : 'resumed'} schedule ${input.name}` };
}

/** The add form's fields, as typed: every one text, the cap a number only once it is one. */
export interface ScheduleForm {
  name: string;
  workflow: string;
  cron: string;
  timeZone: string;
  input: string;
  overlap: string;
  catchUp: string;
  catchUpCap: string;
}

export async function addScheduleAction(form: ScheduleForm): Promise<ActionResult> {
  const caller = await operatorCaller();
  const text = (value: unknown) => (typeof value === 'string' ? value.trim() : '');
  const input = jsonField('input', text(form?.input), {});
  if (!input.ok) return input.result;
  const catchUp = text(form?.catchUp) || 'latest';
  // The form keeps a cap's field (and its default) while another policy is chosen, hidden: only `all` sends it.
  const cap = catchUp === 'all' ? text(form?.catchUpCap) : '';
  try {
    await schedules.add(controlDeps(), caller, {
      name: text(form?.name),
      workflow: text(form?.workflow),
      cron: text(form?.cron),
      timeZone: text(form?.timeZone) || 'UTC',
      input: input.value,
      overlap: (text(form?.overlap) || 'skip') as 'skip',
      catchUp: catchUp as 'latest',
      // A cap that is not a whole number is the spec's to refuse, by its own words.
      catchUpCap: cap === '' ? undefined : (schedules.capFromText(cap) as number),
    });
  } catch (error) {
    return failure(error);
  }
  revalidate();
  return { ok: true, message: `added schedule ${text(form.name)}` };
}

export async function deleteScheduleAction(input: { name: string; reason?: string }): Promise<ActionResult> {
  const caller = await operatorCaller();
  try {
    await schedules.remove(controlDeps(), caller, { name: input?.name, reason: input?.reason });
  } catch (error) {
    return failure(error);
  }
  revalidate();
  return { ok: true, message: `deleted schedule ${input.name}` };
}

function revalidate(): void {
  revalidatePath('/schedules');
  revalidatePath('/audit');
}
