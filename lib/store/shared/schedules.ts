/** What both backends make of a schedules row, and the one order the firing's upsert keeps to. */
import type { CatchUpPolicy, OverlapPolicy, RunStatus, ScheduleRow, ScheduleSource } from '../contract';
import { FINISHED_STATUSES, RUN_STATUSES } from './sql';
import { withServers } from './workflow-servers';

export interface ScheduleColumns {
  name: string;
  workflow: string;
  cron: string;
  timeZone: string;
  inputJson: string;
  overlap: string;
  catchUp: string;
  catchUpCap: number;
  paused: number;
  source: string;
  nextFireAt: number;
  lastTickAt: number | null;
  lastRunId: string | null;
  createdAt: number;
  updatedAt: number;
}

export function scheduleRow(r: ScheduleColumns): ScheduleRow {
  return {
    ...r,
    overlap: r.overlap as OverlapPolicy,
    catchUp: r.catchUp as CatchUpPolicy,
    source: r.source as ScheduleSource,
    paused: r.paused !== 0,
  };
}

/** Whether a declared schedule's tick times changed, so its next tick must be taken from the new definition. */
export function ticksChanged(
  old: { cron: string; timeZone: string },
  now: { cron: string; timeZone: string },
): boolean {
  return old.cron !== now.cron || old.timeZone !== now.timeZone;
}

/** A run a schedule's next tick overlaps: one not ended (the pick's SQL and the plan both judge by it). */
export const GOING_STATUSES: readonly RunStatus[] = RUN_STATUSES.filter(
  (s) => !(FINISHED_STATUSES as readonly RunStatus[]).includes(s),
);

/**
 * The previous run as the firing's plan is given it (PlanFiring's `previous`): its status, or null when there is
 * none or it had ended by the due tick (`nextFireAt`). A run that ended after the tick came held it back (overlap
 * `queue`), so the plan fires that tick however late; one that ended before held nothing, and a tick fired late
 * after it was missed, as catch-up has it. A tick `queue`'s catch-up kept due had come before the run fired beside
 * it was even created, so that run, ended, always held it. An ended run with no end time (a row written by hand)
 * is taken to have held the tick: of a late run and a lost one, the lost one is the broken promise.
 */
export function previousAtTick(
  run: { status: RunStatus; finishedAt: number | null } | undefined,
  due: number,
): RunStatus | null {
  if (!run) return null;
  const endedBefore = !GOING_STATUSES.includes(run.status) && run.finishedAt !== null && run.finishedAt <= due;
  return endedBefore ? null : run.status;
}

/**
 * What a tick's run takes from its workflow's published row, as a start from the control plane does
 * (lib/engine/catalog.ts, through lib/engine/runs.ts startRun): its fixed step count and its default priority.
 * A count that is a function of the input is the worker's to fill in, and so is the budget; concurrency and rate
 * keys are read from the input at the pick.
 */
export function tickRunDefaults(published: Parameters<typeof withServers>[0][number] | undefined): {
  totalSteps: number | null;
  priority: number;
} {
  const [workflow] = published ? withServers([published], []) : [];
  return { totalSteps: workflow?.totalSteps ?? null, priority: workflow?.limits.priority ?? 0 };
}
