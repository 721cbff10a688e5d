'use server';
/**
 * Run mutations: start, and the operator's pause / resume / cancel / retry, one run or many. Each validates
 * its input with zod, calls lib/, and refreshes the pages that show runs. The store records every action
 * as an operator event in the run's timeline; the audit log says who it was. Each checks the caller first
 * (operator, same origin), before it parses anything or opens the store.
 */
import { revalidatePath } from 'next/cache';
import { z } from 'zod';
import { requireAction } from '@/lib/auth/server';
import { config } from '@/lib/config';
import { audit } from '@/lib/data/audit';
import { getCatalog, getStore } from '@/lib/data/store';
import { issuePath } from '@/lib/engine/input-check';
import { startRun } from '@/lib/engine/runs';
import { InvalidInputError } from '@/lib/errors';
import { auditDetail, reasonSchema } from '@/lib/reason';
import type { RunAction } from '@/lib/store/types';
import { failure, fieldErrors, sizeError, type ActionResult } from './result';

const runId = z.string().min(1, 'run id is required').max(512, 'run id is too long');
const action = z.enum(['pause', 'resume', 'cancel', 'retry']);

const actSchema = z.object({
  action, ids: z.array(runId).min(1, 'select at least one run').max(500, 'at most 500 runs at once'), reason: reasonSchema,
});

/**
 * One action over one or more runs; runs whose status does not allow it are reported, not fatal. `reason`
 * (optional, the confirm dialog's) is kept in each run's audit line.
 */
export async function actOnRuns(input: { action: RunAction; ids: string[]; reason?: string }): Promise<ActionResult<{ done: string[]; refused: string[] }>> {
  const who = await requireAction('operator');
  const parsed = actSchema.safeParse(input);
  if (!parsed.success) return { ok: false, message: 'invalid request', errors: fieldErrors(parsed.error) };
  try {
    const store = await getStore();
    const done: string[] = [];
    const refused: string[] = [];
    for (const id of parsed.data.ids) {
      try {
        await store.actOnRun(id, parsed.data.action, who.actor);
        done.push(id);
      } catch (error) {
        // Our own errors say why (not found, wrong status); anything else is logged, never shown.
        refused.push(`${id}: ${failure(error).message}`);
      }
    }
    const detail = auditDetail({ reason: parsed.data.reason });
    for (const id of done) await audit(who, { action: parsed.data.action, target: id, runId: id, detail });
    revalidatePath('/');
    revalidatePath('/audit');
    for (const id of parsed.data.ids) revalidatePath(`/runs/${encodeURIComponent(id)}`);
    const message = `${parsed.data.action}: ${done.length} run(s) done${refused.length ? `, ${refused.length} refused` : ''}`;
    return refused.length && !done.length ? { ok: false, message: refused.join('; ') } : { ok: true, message, data: { done, refused } };
  } catch (error) {
    return failure(error);
  }
}

const startSchema = z.object({
  workflow: z.string().min(1, 'choose a workflow'),
  input: z.string(),
  id: z.string().max(128, 'at most 128 characters').optional(),
});

/** Starts a run from the form. JSON and schema errors come back per field ("input", "input.count", …). */
export async function startRunAction(_previous: ActionResult<{ id: string }> | null, form: FormData): Promise<ActionResult<{ id: string }>> {
  const who = await requireAction('operator');
  const parsed = startSchema.safeParse({
    workflow: form.get('workflow') ?? '', input: form.get('input') ?? '', id: (form.get('id') as string | null) || undefined,
  });
  if (!parsed.success) return { ok: false, message: 'check the form', errors: fieldErrors(parsed.error) };
  const tooLarge = sizeError('input', parsed.data.input, config().WAYBILL_MAX_BODY_BYTES);
  if (tooLarge) return { ok: false, message: 'the input is too large', errors: { input: [tooLarge] } };
  let input: unknown;
  try {
    input = JSON.parse(parsed.data.input || '{}');
  } catch (error) {
    return { ok: false, message: 'the input is not valid JSON', errors: { input: [`not valid JSON: ${(error as Error).message}`] } };
  }
  try {
    // Checked again here whatever the form checked: the catalog is the built-ins and what workers published.
    const catalog = await getCatalog();
    const name = parsed.data.workflow;
    const checked = catalog.check(name, input);
    if (!checked) {
      return { ok: false, message: `unknown workflow ${JSON.stringify(name)}`, errors: { workflow: [`unknown workflow (known: ${catalog.names().join(', ')})`] } };
    }
    if (!checked.ok) {
      const errors: Record<string, string[]> = {};
      for (const issue of checked.issues) (errors[issue.path.length ? `input.${issuePath(issue)}` : 'input'] ??= []).push(issue.message);
      return { ok: false, message: `the input does not match ${name}'s schema`, errors };
    }
    const store = await getStore();
    const run = await startRun(store, catalog, { workflow: name, input: checked.input, id: parsed.data.id });
    await store.recordEvent({ runId: run.id, outcome: 'operator', detail: `started by ${who.actor}` });
    await audit(who, { action: 'start', target: run.id, runId: run.id, detail: name });
    revalidatePath('/');
    revalidatePath('/audit');
    return { ok: true, message: `started ${run.id}`, data: { id: run.id } };
  } catch (error) {
    if (error instanceof InvalidInputError) return { ok: false, message: error.message, errors: { id: [error.message] } };
    return failure(error);
  }
}
