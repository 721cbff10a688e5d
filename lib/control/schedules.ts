/**
 * Schedules at run time: add, pause, resume, delete, and the one reader of the list (the schedules page, the
 * API and `waybill schedules`). Each authorizes an operator, validates with the one schedule spec
 * (lib/engine/schedules/spec.ts: a cron expression croner cannot read, or an unknown time zone, is a refusal
 * naming its field), checks the input against the workflow's schema, and only then writes; the audit line
 * follows the change.
 */
import { z } from 'zod';
import { storableText } from '../domain/text';
import { nextTick } from '../engine/schedules/cron';
import { FINISHED } from '../engine/schedules/policy';
import { checkSchedule, DEFAULT_CATCH_UP_CAP, scheduleFields } from '../engine/schedules/spec';
import { InvalidTransitionError, NotFoundError, StartRefusedError } from '../errors';
import type { RunRow, ScheduleRow } from '../store/contract';
import { record } from './audit';
import { authorize, type Caller } from './caller';
import { validate } from './errors';
import { reasonField } from './fields';
import { startRefused } from './input-refusal';
import type { ControlDeps } from './store';
import { jsonValue } from './views';

/** An operator's schedule: the spec's fields and checks, and the workflow it starts. */
export const addInput = z
  .strictObject({
    ...scheduleFields.shape,
    workflow: z
      .string({ error: 'must be a workflow name' })
      .min(1, 'choose a workflow')
      .max(64, 'must be at most 64 characters'),
    paused: z.boolean({ error: 'must be true or false' }).optional(),
    reason: reasonField,
  })
  .superRefine(checkSchedule);

export const nameInput = z.strictObject({
  name: z
    .string({ error: 'must be a schedule name' })
    .min(1, 'must not be empty')
    .max(200, 'must be at most 200 characters')
    .superRefine(storableText),
  reason: reasonField,
});

/**
 * A cap typed as text (a CLI flag, a form field), as the spec is to judge it: a number once the text reads as one
 * (`2.5`, `-3`), so that it is refused in the spec's own words (a whole number, at least 1, at most 1000), as the API
 * refuses the same number; any other text stays text, refused as no number.
 */
export function capFromText(text: string): number | string {
  return /^[-+]?\d+(\.\d+)?(e[-+]?\d+)?$/i.test(text) ? Number(text) : text;
}

/** How many of a schedule's last runs the list shows. */
export const LAST_RUNS = 5;

/** A schedule as the page, the API and the CLI's --json show it. Times are epoch seconds. */
export function scheduleView(row: ScheduleRow, lastRuns: Pick<RunRow, 'id' | 'status' | 'createdAt'>[] = []) {
  return {
    name: row.name,
    workflow: row.workflow,
    cron: row.cron,
    timeZone: row.timeZone,
    input: jsonValue(row.inputJson),
    overlap: row.overlap,
    catchUp: row.catchUp,
    // Read by catch-up all only (a schedule added with another keeps the default, unread): null, so the view
    // added again as it is adds the same schedule.
    catchUpCap: row.catchUp === 'all' ? row.catchUpCap : null,
    paused: row.paused,
    source: row.source,
    nextFireAt: row.paused || row.nextFireAt === FINISHED ? null : row.nextFireAt,
    /** Its expression has no tick to come: it fires no more, and stays for its runs' history. */
    finished: row.nextFireAt === FINISHED,
    lastTickAt: row.lastTickAt,
    lastRunId: row.lastRunId,
    lastRuns: lastRuns.map((r) => ({ id: r.id, status: r.status, createdAt: r.createdAt })),
    createdAt: row.createdAt,
    updatedAt: row.updatedAt,
  };
}
export type ScheduleView = ReturnType<typeof scheduleView>;

/** Every schedule by name, each with its last runs (newest first): a viewer's read. */
export async function list(deps: ControlDeps, caller: Caller): Promise<ScheduleView[]> {
  authorize(caller, 'viewer');
  const store = await deps.store();
  const rows = await store.listSchedules();
  return Promise.all(
    rows.map(async (row) => {
      // A tick's run id begins with its schedule's name and a colon, and sorts by its tick.
      const runs = await store.listRuns({
        search: `${row.name}:`,
        workflow: row.workflow,
        limit: 50,
        claimTtlMs: deps.claimTtlMs,
      });
      const own = runs
        .filter((r) => r.id.startsWith(`${row.name}:`))
        .sort((a, b) => (a.id < b.id ? 1 : -1))
        .slice(0, LAST_RUNS)
        .map((r) => ({ id: r.id, status: r.status as RunRow['status'], createdAt: r.createdAt ?? 0 }));
      return scheduleView(row, own);
    }),
  );
}

/** Adds a schedule at run time. Its first tick is the first after now. A taken name is ConflictError. */
export async function add(deps: ControlDeps, caller: Caller, input: z.input<typeof addInput>): Promise<ScheduleRow> {
  authorize(caller, 'operator');
  const given = validate(addInput, input);
  if (!deps.workflows) throw new Error('lib/control schedules.add: no workflows given');
  const store = await deps.store();
  const workflows = await deps.workflows(store);
  const checked = workflows.check(given.workflow, given.input);
  if (!checked) {
    const message = `unknown workflow ${JSON.stringify(given.workflow)} (known: ${workflows.names().join(', ')})`;
    throw new StartRefusedError(given.workflow, 'unknown-workflow', message, { workflow: [message] });
  }
  if (!checked.ok) throw startRefused(given.workflow, checked);
  const now = Date.now() / 1000;
  const row = await store.createSchedule({
    name: given.name,
    workflow: given.workflow,
    cron: given.cron,
    timeZone: given.timeZone,
    inputJson: JSON.stringify(checked.input),
    overlap: given.overlap,
    catchUp: given.catchUp,
    catchUpCap: given.catchUpCap ?? DEFAULT_CATCH_UP_CAP,
    source: 'operator',
    paused: given.paused ?? false,
    nextFireAt: nextTick(given.cron, given.timeZone, now) ?? now,
  });
  await record(store, caller, {
    action: 'schedule-add',
    target: row.name,
    note: `workflow ${row.workflow}, cron ${row.cron} (${row.timeZone})`,
    reason: given.reason,
  });
  return row;
}

/**
 * Pauses (no tick fires) or resumes (from the next tick after now: a pause is never caught up). Pausing a paused
 * schedule, or resuming one that is not paused, is INVALID_TRANSITION (409) with nothing written, as a run's pause
 * or resume is: the audit keeps actions that took effect, and a script sees that its pause did not. The store's
 * write decides which, so of operators pausing at once one is audited and the others are told 409.
 */
export async function setPaused(
  deps: ControlDeps,
  caller: Caller,
  paused: boolean,
  input: z.input<typeof nameInput>,
): Promise<ScheduleRow> {
  authorize(caller, 'operator');
  const given = validate(nameInput, input);
  const store = await deps.store();
  // Read for its cron and time zone, whose next tick a resume starts from; whether it is paused is the write's to say.
  const row = await store.getSchedule(given.name);
  if (!row) throw new NotFoundError(`schedule ${given.name}`);
  const now = Date.now() / 1000;
  const updated = await store.setSchedulePaused(
    given.name,
    paused,
    paused ? undefined : (nextTick(row.cron, row.timeZone, now) ?? FINISHED),
  );
  if (!updated)
    throw new InvalidTransitionError(
      given.name,
      paused ? 'pause' : 'resume',
      paused ? 'paused already' : 'not paused',
      'schedule',
    );
  await record(store, caller, {
    action: paused ? 'schedule-pause' : 'schedule-resume',
    target: given.name,
    reason: given.reason,
  });
  return updated;
}

/** Deletes a schedule; the runs it fired stay. A schedule its workflow's code declares comes back at its worker's next start. */
export async function remove(deps: ControlDeps, caller: Caller, input: z.input<typeof nameInput>): Promise<void> {
  authorize(caller, 'operator');
  const given = validate(nameInput, input);
  const store = await deps.store();
  if (!(await store.deleteSchedule(given.name))) throw new NotFoundError(`schedule ${given.name}`);
  await record(store, caller, { action: 'schedule-delete', target: given.name, reason: given.reason });
}
