/** What both backends make of a schedules row, and the one order the firing's upsert keeps to. */
import type { CatchUpPolicy, OverlapPolicy, ScheduleRow, ScheduleSource } from '../contract';

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
