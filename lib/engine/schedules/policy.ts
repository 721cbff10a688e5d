/**
 * What firing a due schedule makes of its ticks: the overlap policy (the previous run still going) and the
 * catch-up policy (ticks missed while no worker fired). Pure: the store calls it inside the firing's
 * transaction (ScheduleStore.fireDueSchedules), with the store's clock and the previous run's status.
 */
import type { FirePlan, PlanFiring, RunStatus, ScheduleRow } from '../../store/contract';
import { nextTick, ticksBetween } from './cron';

/** A tick fired later than this (or than its period, when shorter) is missed, not late: catch-up `none` drops it. */
export const ON_TIME_SECONDS = 60;

/** A run the next tick would overlap: not ended. */
const GOING: ReadonlySet<RunStatus> = new Set(['queued', 'running', 'waiting', 'paused']);

export const planFiring: PlanFiring = (schedule, { now, previous }) => plan(schedule, now, previous);

export function plan(
  schedule: Pick<ScheduleRow, 'cron' | 'timeZone' | 'nextFireAt' | 'overlap' | 'catchUp' | 'catchUpCap'>,
  now: number,
  previous: RunStatus | null,
): FirePlan {
  const going = previous !== null && GOING.has(previous);
  const hold = { ticks: [], nextFireAt: schedule.nextFireAt, defer: true, cancelPrevious: false };
  if (going && schedule.overlap === 'queue') return hold;
  const limit = schedule.catchUp === 'all' ? Math.max(1, schedule.catchUpCap) : 1;
  const due = ticksBetween(schedule.cron, schedule.timeZone, schedule.nextFireAt, now, limit);
  // A schedule whose expression lost its ticks (none to come) is parked at its due time, never fired.
  const next = nextTick(schedule.cron, schedule.timeZone, now);
  if (next === null) return hold;
  const ticks = caughtUp(due, schedule.catchUp, now, next);
  if (going && schedule.overlap === 'skip') return { ticks: [], nextFireAt: next, defer: false, cancelPrevious: false };
  return { ticks, nextFireAt: next, defer: false, cancelPrevious: going && schedule.overlap === 'cancel' };
}

/** The due ticks (the latest last, at most the cap for `all`) that this firing makes runs of. */
function caughtUp(due: number[], catchUp: ScheduleRow['catchUp'], now: number, next: number): number[] {
  const latest = due.at(-1);
  if (latest === undefined) return [];
  if (catchUp === 'all') return due;
  if (catchUp === 'latest') return [latest];
  // none: the latest fires only on time. Its period is at least next - latest, as next is the tick after it.
  return now - latest < Math.min(ON_TIME_SECONDS, next - latest) ? [latest] : [];
}
