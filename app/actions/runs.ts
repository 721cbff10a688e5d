'use server';
/**
 * Run mutations: start, and the operator's pause / resume / cancel / retry, one run or many. Thin: each
 * checks the caller first, reads its form, calls lib/control (which decides, validates, writes the event and
 * the audit line) and refreshes the pages that show runs.
 */
import { revalidatePath } from 'next/cache';
import { z } from 'zod';
import { bulk, runs } from '@/lib/control';
import type { BulkAction, BulkFilter, BulkPreview, BulkReport } from '@/lib/control/bulk';
import { count, counted } from '@/lib/count';
import { controlDeps } from '@/lib/data/control';
import { InvalidInputError, StartRefusedError } from '@/lib/errors';
import type { RunAction } from '@/lib/store/contract';
import { type ActionResult, failure, fieldErrors, jsonField, operatorCaller } from './result';

// Only the list's shape: each id and the reason are the operation's to check.
const actSchema = z.object({
  ids: z.array(z.string()).min(1, 'select at least one run').max(500, 'at most 500 runs at once'),
});

/**
 * One action over one or more runs; runs whose status does not allow it are reported, not fatal. `reason`
 * (optional, the confirm dialog's) is kept in each run's audit line.
 */
export async function actOnRuns(input: {
  action: RunAction;
  ids: string[];
  reason?: string;
}): Promise<ActionResult<{ done: string[]; refused: string[] }>> {
  const caller = await operatorCaller();
  const parsed = actSchema.safeParse(input);
  if (!parsed.success) return { ok: false, message: 'invalid request', errors: fieldErrors(parsed.error) };
  const deps = controlDeps();
  const done: string[] = [];
  const refused: string[] = [];
  for (const id of parsed.data.ids) {
    try {
      await runs.act(deps, caller, { action: input.action, runId: id, reason: input.reason });
      done.push(id);
    } catch (error) {
      // Bad input is the same for every id: said once, as the form's error.
      const failed = failure(error);
      if (failed.errors && done.length === 0) return { ok: false, message: 'invalid request', errors: failed.errors };
      // Our own errors say why (not found, wrong status); anything else is logged, never shown.
      refused.push(`${id}: ${failed.message}`);
    }
  }
  revalidatePath('/');
  revalidatePath('/audit');
  for (const id of parsed.data.ids) revalidatePath(`/runs/${encodeURIComponent(id)}`);
  const message = `${input.action}: ${counted(done.length, 'run')} done${refused.length ? `, ${count(refused.length)} refused` : ''}`;
  return refused.length && !done.length
    ? { ok: false, message: refused.join('; ') }
    : { ok: true, message, data: { done, refused } };
}

/**
 * The count the "all matching" confirmation shows: how many runs match, and how many each action applies to
 * (a rerun's with the step given, when it is a number).
 */
export async function previewBulkAction(input: {
  filter: BulkFilter;
  fromStep?: number | string;
}): Promise<ActionResult<BulkPreview>> {
  const caller = await operatorCaller();
  try {
    return { ok: true, message: 'counted', data: await bulk.preview(controlDeps(), caller, input) };
  } catch (error) {
    return failure(error);
  }
}

/**
 * One action over every run the filter matches, or a rerun of the runs a page selected (lib/control/bulk.ts):
 * done in batches, one audit line per run, the runs it does not apply to skipped with the reason.
 */
export async function bulkByFilterAction(
  input:
    | { action: BulkAction; filter: BulkFilter; fromStep?: number | string; reason?: string }
    | { action: 'rerun'; ids: string[]; fromStep: number | string; reason?: string },
): Promise<ActionResult<BulkReport>> {
  const caller = await operatorCaller();
  try {
    const report = await bulk.apply(controlDeps(), caller, input);
    revalidatePath('/');
    revalidatePath('/audit');
    const message = `${input.action}: ${report.matched} matched, ${report.done} done${report.skipped.length ? `, ${report.skipped.length} skipped` : ''}`;
    return { ok: true, message, data: report };
  } catch (error) {
    return failure(error);
  }
}

const startSchema = z.object({
  workflow: z.string(),
  input: z.string(),
  id: z.string().max(128, 'at most 128 characters').optional(),
  tags: z.string().max(4096, 'at most 4096 characters'),
  metadata: z.string().max(16_384, 'at most 16384 characters'),
});

/** The form's tags (separated by spaces or commas) and metadata (one key=value a line), for lib/control's rules. */
function tagsOfForm(
  tags: string,
  metadata: string,
): { ok: true; tags?: string[]; metadata?: Record<string, string> } | { ok: false; errors: Record<string, string[]> } {
  const lines = metadata.split(/\r?\n/).filter((line) => line.trim() !== '');
  const bad = lines.filter((line) => !line.includes('='));
  if (bad.length) return { ok: false, errors: { metadata: [`each line is key=value: ${JSON.stringify(bad[0])}`] } };
  const list = tags.split(/[\s,]+/).filter(Boolean);
  const pairs = lines.map((line) => [
    line.slice(0, line.indexOf('=')).trim(),
    line.slice(line.indexOf('=') + 1).trim(),
  ]);
  return {
    ok: true,
    ...(list.length ? { tags: list } : {}),
    ...(pairs.length ? { metadata: Object.fromEntries(pairs) } : {}),
  };
}

/** Starts a run from the form. JSON and schema errors come back per field ("input", "input.count", …). */
export async function startRunAction(
  _previous: ActionResult<{ id: string }> | null,
  form: FormData,
): Promise<ActionResult<{ id: string }>> {
  const caller = await operatorCaller();
  const parsed = startSchema.safeParse({
    workflow: form.get('workflow') ?? '',
    input: form.get('input') ?? '',
    id: (form.get('id') as string | null) || undefined,
    tags: form.get('tags') ?? '',
    metadata: form.get('metadata') ?? '',
  });
  if (!parsed.success) return { ok: false, message: 'check the form', errors: fieldErrors(parsed.error) };
  const labels = tagsOfForm(parsed.data.tags, parsed.data.metadata);
  if (!labels.ok) return { ok: false, message: 'check the form', errors: labels.errors };
  const json = jsonField('input', parsed.data.input, {});
  if (!json.ok) return json.result;
  const input = json.value;
  try {
    const run = await runs.start(controlDeps(), caller, {
      workflow: parsed.data.workflow,
      input,
      id: parsed.data.id,
      tags: labels.tags,
      metadata: labels.metadata,
    });
    revalidatePath('/');
    revalidatePath('/audit');
    return { ok: true, message: `started ${run.id}`, data: { id: run.id } };
  } catch (error) {
    if (error instanceof StartRefusedError) {
      if (error.kind === 'input')
        return { ok: false, message: `the input does not match ${error.workflow}'s schema`, errors: error.fields };
      if (error.kind === 'limit-key') return { ok: false, message: error.message, errors: error.fields };
      return { ok: false, message: `unknown workflow ${JSON.stringify(error.workflow)}`, errors: error.fields };
    }
    if (error instanceof InvalidInputError && !('fields' in error))
      return { ok: false, message: error.message, errors: { id: [error.message] } };
    return failure(error);
  }
}

/**
 * The run page's budget form: the amount as typed, checked by lib/control's one budget rule (a wrong amount comes
 * back beside the `budgetUsd` field). A run the gateway paused at its budget is resumed by the Resume button.
 */
export async function setBudgetAction(input: {
  runId: string;
  budgetUsd: string;
  reason?: string;
}): Promise<ActionResult<{ budgetUsd: number }>> {
  const caller = await operatorCaller();
  // Anything but text (a hand-made call to the action) is no amount: the budget rule refuses it by name.
  const typed = typeof input?.budgetUsd === 'string' ? input.budgetUsd.trim() : '';
  try {
    const run = await runs.budget(controlDeps(), caller, {
      runId: input?.runId,
      budgetUsd: typed === '' ? Number.NaN : Number(typed),
      reason: input?.reason,
    });
    revalidatePath(`/runs/${encodeURIComponent(run.id)}`);
    revalidatePath('/audit');
    const next = run.status === 'paused' ? '; resume the run to continue' : '';
    return { ok: true, message: `budget set to $${run.budgetUsd}${next}`, data: { budgetUsd: run.budgetUsd! } };
  } catch (error) {
    return failure(error);
  }
}
