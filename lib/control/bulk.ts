/**
 * Bulk: one operator action (pause, resume, cancel, retry, or rerun from a step) over many runs — every run a
 * filter matches (GET /api/v1/runs's filters: status, waiting, workflow, q), or the runs a page had selected (ids). The
 * runs are listed first, in pages, so `matched` is what the filter matched when the operation began; then
 * each is acted on as the one-run operation acts — the store's transition (or rerun), the run's `operator`
 * event, one audit line per run. A run the action does not apply to is skipped with the reason, never fatal:
 * its status, an outside client's run (no status to move, no workflow to run again), a step beyond its last,
 * a step name it does not have. The dashboard's bulk bar, POST /api/v1/runs/bulk and the CLI's
 * `--all-matching` all call this.
 */
import { z } from 'zod';
import { ControlInputError, InvalidTransitionError, NotFoundError, RewindRefusedError } from '../errors';
import type { RunAction, RunSummary } from '../store/contract';
import { LISTED_STATUSES } from '../store/shared/outside-runs';
import { TRANSITIONS } from '../store/shared/transitions';
import { authorize, type Caller } from './caller';
import { validate } from './errors';
import {
  metaPairs,
  metaTextFilter,
  reasonField,
  runRef,
  tagFilter,
  WAITING_WITH_STATUS,
  waitingFilter,
  waitingMatchesStatus,
} from './fields';
import { rerunOne, stepRef } from './rewind';
import { actOne } from './runs';
import type { ControlDeps, ControlStore } from './store';

export type BulkAction = RunAction | 'rerun';
export const BULK_ACTIONS = [...(Object.keys(TRANSITIONS) as RunAction[]), 'rerun'] as BulkAction[];

/** The statuses a rerun applies to (store/shared/rewind.ts refuses the others with nothing changed). */
export const RERUNNABLE = ['completed', 'failed', 'cancelled', 'paused'] as const;

/** Runs one bulk operation may act on: past this the filter must be narrowed (the count is said first). */
export const BULK_MAX = 10_000;
/** Rows listed per read, and acted on per batch. */
const BATCH = 200;
/** Ids one selection may name: a page's rows. */
const IDS_MAX = 500;

/** The filters of GET /api/v1/runs, with its rules: a status it lists, a workflow name, a search text. */
export const bulkFilter = z
  .strictObject(
    {
      status: z.enum(LISTED_STATUSES, { error: `must be one of ${LISTED_STATUSES.join(', ')}` }).optional(),
      waiting: waitingFilter.optional(),
      workflow: z
        .string({ error: 'must be a workflow name' })
        .regex(/^[a-z][a-z0-9-]{0,63}$/, 'must be a workflow name (lowercase letters, digits, dashes)')
        .optional(),
      q: z
        .string({ error: 'must be text' })
        .max(200, 'must be at most 200 characters')
        .refine((s) => !/\p{Cc}/u.test(s), 'must not contain control characters')
        .optional(),
      /** Only this run's children: the runs page's `?parent=` (the run page's "all N children"). */
      parent: runRef.optional(),
      /** Only runs with every one of these tags, and every `key=value`: the runs page's `?tag=` and `?meta=`. */
      tag: tagFilter.optional(),
      meta: metaTextFilter.optional(),
    },
    {
      error: (issue) =>
        issue.code === 'invalid_type' ? 'must be an object of status, waiting, workflow and q' : undefined,
    },
  )
  .refine(waitingMatchesStatus, { path: ['waiting'], message: WAITING_WITH_STATUS });

const ids = z
  .array(runRef, { error: 'must be a list of run ids' })
  .min(1, 'must name at least one run')
  .max(IDS_MAX, `must name at most ${IDS_MAX} runs`);

export const bulkInput = z
  .strictObject({
    action: z.enum(BULK_ACTIONS as [BulkAction, ...BulkAction[]], {
      error: `must be one of ${BULK_ACTIONS.join(', ')}`,
    }),
    /** Every run this matches; or `ids`, the runs a page had selected. Exactly one of the two. */
    filter: bulkFilter.optional(),
    ids: ids.optional(),
    /** rerun only: the step to rerun from, a number or a step's name (resolved in each run). */
    fromStep: stepRef.optional(),
    reason: reasonField,
  })
  .superRefine((given, ctx) => {
    if (given.filter === undefined && given.ids === undefined)
      ctx.addIssue({
        code: 'custom',
        path: ['filter'],
        message: 'must be an object of status, waiting, workflow and q',
      });
    if (given.filter !== undefined && given.ids !== undefined)
      ctx.addIssue({ code: 'custom', path: ['ids'], message: 'give either filter or ids, not both' });
    if (given.action === 'rerun' && given.fromStep === undefined)
      ctx.addIssue({ code: 'custom', path: ['fromStep'], message: 'is required for rerun: a step number or name' });
    if (given.action !== 'rerun' && given.fromStep !== undefined)
      ctx.addIssue({ code: 'custom', path: ['fromStep'], message: 'is only for rerun' });
  });

export type BulkFilter = z.output<typeof bulkFilter>;
export type BulkInput = z.input<typeof bulkInput>;

export interface BulkReport {
  matched: number;
  done: number;
  skipped: { id: string; reason: string }[];
}

/** What the confirmation counts: the runs matched, and how many of them each action applies to now. */
export interface BulkPreview {
  matched: number;
  /**
   * Per action, by status (and for rerun, with a step number given, by the runs' last step). A rerun by step
   * name is counted by status only: each run resolves the name when the rerun is done.
   */
  applicable: Record<BulkAction, number>;
  /** More than BULK_MAX matched: the operation would be refused (matched is then BULK_MAX + 1). */
  tooMany: boolean;
}

/** Every run the filter matches, newest first, in pages; more than BULK_MAX is ControlInputError on `filter`. */
async function matching(store: ControlStore, filter: BulkFilter, claimTtlMs: number): Promise<RunSummary[]> {
  const out: RunSummary[] = [];
  let after: { updatedAt: number; id: string } | undefined;
  for (;;) {
    const page = await store.listRuns({
      status: filter.status,
      waiting: filter.waiting,
      workflow: filter.workflow,
      search: filter.q || undefined,
      parent: filter.parent,
      tags: filter.tag?.length ? filter.tag : undefined,
      meta: metaPairs(filter.meta),
      limit: BATCH,
      claimTtlMs,
      after,
    });
    out.push(...page);
    if (out.length > BULK_MAX) {
      throw ControlInputError.of({
        filter: [`matches more than ${BULK_MAX.toLocaleString('en-US')} runs: narrow it (status, workflow, q)`],
      });
    }
    if (page.length < BATCH) return out;
    const last = page.at(-1)!;
    after = { updatedAt: last.updatedAt, id: last.id };
  }
}

/** What deciding whether an action applies needs of a run. */
type Candidate = Pick<RunSummary, 'id' | 'status' | 'workflow' | 'totalSteps'>;

/** The selected runs' rows; an id with none is skipped with the reason, not fatal. */
async function selected(store: ControlStore, given: string[], report: BulkReport): Promise<Candidate[]> {
  const out: Candidate[] = [];
  for (const id of [...new Set(given)]) {
    const run = await store.getRun(id);
    if (run) out.push(run);
    else
      report.skipped.push({
        id,
        reason: `run ${id} has no runs row: an outside client's run (no status to move, no workflow to run again), or none`,
      });
  }
  return out;
}

/** Why the action does not apply to this run, or null when it does (the store decides again, in its transaction). */
function notApplicable(action: BulkAction, run: Candidate, fromStep?: number | string): string | null {
  if (action === 'rerun') {
    if (run.status === 'idle' || run.workflow === 'external')
      return "an outside client's run: it has no workflow to run it again";
    if (!(RERUNNABLE as readonly string[]).includes(run.status))
      return `is ${run.status}: rerun applies to ${RERUNNABLE.join(', ')} runs${run.status === 'running' ? ' (pause it first)' : ''}`;
    if (typeof fromStep === 'number' && run.totalSteps !== null && fromStep >= run.totalSteps)
      return `step ${fromStep} is beyond its last step (${run.totalSteps - 1})`;
    return null;
  }
  if (run.status === 'idle' || run.workflow === 'external') return "an outside client's run: it has no status to move";
  const from = TRANSITIONS[action].from;
  return from.includes(run.status) ? null : `is ${run.status}: ${action} applies to ${from.join(', ')} runs`;
}

const previewInput = z.strictObject({ filter: bulkFilter, fromStep: stepRef.optional() });

/** How many runs the filter matches and how many of them each action applies to now. A viewer may ask. */
export async function preview(
  deps: ControlDeps,
  caller: Caller,
  input: { filter: unknown; fromStep?: unknown },
): Promise<BulkPreview> {
  authorize(caller, 'viewer');
  const given = validate(previewInput, input);
  const store = await deps.store();
  const applicable = Object.fromEntries(BULK_ACTIONS.map((a) => [a, 0])) as Record<BulkAction, number>;
  let runs: RunSummary[];
  try {
    runs = await matching(store, given.filter, deps.claimTtlMs);
  } catch (error) {
    if (error instanceof ControlInputError) return { matched: BULK_MAX + 1, applicable, tooMany: true };
    throw error;
  }
  for (const run of runs)
    for (const action of BULK_ACTIONS) if (notApplicable(action, run, given.fromStep) === null) applicable[action]++;
  return { matched: runs.length, applicable, tooMany: false };
}

/** Refusals of one run that say why it is skipped: it moved since it was listed, is gone, or cannot be rewound. */
const skips = (error: unknown) =>
  error instanceof InvalidTransitionError || error instanceof NotFoundError || error instanceof RewindRefusedError;

/**
 * The action over every run the filter matches, or over the ids given. Refused whole (nothing written) for a
 * viewer, bad input or a filter matching more than BULK_MAX; otherwise each run is done or skipped with its
 * reason, in batches of BATCH.
 */
export async function apply(
  deps: ControlDeps,
  caller: Caller,
  input: BulkInput | { action: unknown; filter?: unknown; ids?: unknown; fromStep?: unknown; reason?: unknown },
): Promise<BulkReport> {
  authorize(caller, 'operator');
  const given = validate(bulkInput, input);
  const store = await deps.store();
  const report: BulkReport = { matched: 0, done: 0, skipped: [] };
  const runs: Candidate[] = given.filter
    ? await matching(store, given.filter, deps.claimTtlMs)
    : await selected(store, given.ids!, report);
  report.matched = runs.length + report.skipped.length;
  const scope = given.filter ? `runs matching ${describeFilter(given.filter)}` : `${report.matched} selected runs`;
  const from =
    given.action !== 'rerun'
      ? ''
      : typeof given.fromStep === 'number'
        ? ` from step ${given.fromStep}`
        : ` from ${JSON.stringify(given.fromStep)}`;
  const note = `bulk ${given.action}${from} of ${scope}`;
  for (let i = 0; i < runs.length; i += BATCH) {
    for (const run of runs.slice(i, i + BATCH)) {
      const why = notApplicable(given.action, run, given.fromStep);
      if (why) {
        report.skipped.push({ id: run.id, reason: why });
        continue;
      }
      try {
        if (given.action === 'rerun') {
          // rerunOne writes the run's audit line itself, as a rerun of one run does.
          await rerunOne(deps, store, caller, { runId: run.id, fromStep: given.fromStep!, reason: given.reason }, note);
        } else {
          // actOne writes the run's audit line, and a retry's for each child it brought back, as one run's action does.
          await actOne(store, caller, { action: given.action, runId: run.id, reason: given.reason }, note);
        }
      } catch (error) {
        // Moved since it was listed (finished, acted on by someone else), gone (pruned), or a rerun the store
        // refused (a live claim, a step it does not have): said, not fatal.
        if (skips(error)) {
          report.skipped.push({ id: run.id, reason: (error as Error).message });
          continue;
        }
        throw error;
      }
      report.done++;
    }
  }
  return report;
}

/** `status=failed workflow=notify q="x"`, or `every run` for an empty filter: for the audit line. */
export function describeFilter(filter: {
  status?: string;
  waiting?: string;
  workflow?: string;
  q?: string;
  parent?: string;
  tag?: string[];
  meta?: string[];
}): string {
  const parts = [
    filter.status && `status=${filter.status}`,
    filter.waiting && `waiting=${filter.waiting}`,
    filter.workflow && `workflow=${filter.workflow}`,
    filter.q && `q=${JSON.stringify(filter.q)}`,
    filter.parent && `parent=${filter.parent}`,
    ...(filter.tag ?? []).map((tag) => `tag=${tag}`),
    ...(filter.meta ?? []).map((pair) => `meta=${JSON.stringify(pair)}`),
  ].filter(Boolean);
  return parts.length ? parts.join(' ') : 'no filter (every run)';
}
