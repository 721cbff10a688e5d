/**
 * Bulk by filter: one operator action (pause, resume, cancel, retry) over every run a filter matches, the
 * filters being GET /api/v1/runs's (status, waiting, workflow, q). The matching runs are listed first, in pages, so
 * `matched` is what the filter matched when the operation began; then each is acted on as `act` acts on one
 * — the store's transition, the run's `operator` event, one audit line per run. A run the action does not
 * apply to (its status, or an outside client's run, which has no status to move) is skipped with the reason,
 * never fatal. The dashboard's "all matching" bar, the API's POST /api/v1/runs/bulk and the CLI's
 * `--all-matching` all call this.
 *
 * Rerun from a step joins later as another BulkAction: its handler in APPLY, its own fields (the step) in
 * the input, and TRANSITIONS-like rules for which runs it applies to.
 */
import { z } from 'zod';
import { ControlInputError, InvalidTransitionError, NotFoundError } from '../errors';
import { LISTED_STATUSES } from '../store/outside-runs';
import { TRANSITIONS } from '../store/transitions';
import type { RunAction, RunSummary } from '../store/types';
import { record } from './audit';
import { authorize, type Caller } from './caller';
import { validate } from './errors';
import { reasonField, WAITING_WITH_STATUS, waitingFilter, waitingMatchesStatus } from './fields';
import type { ControlDeps, ControlStore } from './store';

export type BulkAction = RunAction;
export const BULK_ACTIONS = Object.keys(TRANSITIONS) as BulkAction[];

/** Runs one bulk operation may act on: past this the filter must be narrowed (the count is said first). */
export const BULK_MAX = 10_000;
/** Rows listed per read, and acted on per batch. */
const BATCH = 200;

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
    },
    {
      error: (issue) =>
        issue.code === 'invalid_type' ? 'must be an object of status, waiting, workflow and q' : undefined,
    },
  )
  .refine(waitingMatchesStatus, { path: ['waiting'], message: WAITING_WITH_STATUS });

export const bulkInput = z.strictObject({
  action: z.enum(BULK_ACTIONS as [BulkAction, ...BulkAction[]], { error: `must be one of ${BULK_ACTIONS.join(', ')}` }),
  filter: bulkFilter,
  reason: reasonField,
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

/** Why the action does not apply to this run, or null when it does. */
function notApplicable(action: BulkAction, run: RunSummary): string | null {
  if (run.status === 'idle' || run.workflow === 'external') return "an outside client's run: it has no status to move";
  const from = TRANSITIONS[action].from;
  return from.includes(run.status) ? null : `is ${run.status}: ${action} applies to ${from.join(', ')} runs`;
}

/** How many runs the filter matches and how many of them each action applies to now. A viewer may ask. */
export async function preview(deps: ControlDeps, caller: Caller, input: { filter: unknown }): Promise<BulkPreview> {
  authorize(caller, 'viewer');
  const given = validate(bulkInput.pick({ filter: true }), input);
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
    for (const action of BULK_ACTIONS) if (notApplicable(action, run) === null) applicable[action]++;
  return { matched: runs.length, applicable, tooMany: false };
}

/**
 * The action over every run the filter matches. Refused whole (nothing written) for a viewer, bad input or a
 * filter matching more than BULK_MAX; otherwise each run is done or skipped with its reason.
 */
export async function apply(
  deps: ControlDeps,
  caller: Caller,
  input: BulkInput | { action: unknown; filter: unknown; reason?: unknown },
): Promise<BulkReport> {
  authorize(caller, 'operator');
  const given = validate(bulkInput, input);
  const store = await deps.store();
  const runs = await matching(store, given.filter, deps.claimTtlMs);
  const note = `bulk ${given.action} of runs matching ${describeFilter(given.filter)}`;
  const report: BulkReport = { matched: runs.length, done: 0, skipped: [] };
  for (let i = 0; i < runs.length; i += BATCH) {
    for (const run of runs.slice(i, i + BATCH)) {
      const why = notApplicable(given.action, run);
      if (why) {
        report.skipped.push({ id: run.id, reason: why });
        continue;
      }
      try {
        await store.actOnRun(run.id, given.action, caller.actor);
      } catch (error) {
        // Moved since it was listed (finished, acted on by someone else), or gone (pruned): said, not fatal.
        if (error instanceof InvalidTransitionError || error instanceof NotFoundError) {
          report.skipped.push({ id: run.id, reason: error.message });
          continue;
        }
        throw error;
      }
      await record(store, caller, { action: given.action, target: run.id, runId: run.id, note, reason: given.reason });
      report.done++;
    }
  }
  return report;
}

/** `status=failed workflow=notify q="x"`, or `every run` for an empty filter: for the audit line. */
export function describeFilter(filter: { status?: string; waiting?: string; workflow?: string; q?: string }): string {
  const parts = [
    filter.status && `status=${filter.status}`,
    filter.waiting && `waiting=${filter.waiting}`,
    filter.workflow && `workflow=${filter.workflow}`,
    filter.q && `q=${JSON.stringify(filter.q)}`,
  ].filter(Boolean);
  return parts.length ? parts.join(' ') : 'no filter (every run)';
}
