/**
 * What firing a due schedule makes of its ticks: the overlap policy (the previous run still going) and the
 * catch-up policy (ticks missed while no worker fired, or, under `queue`, while the previous run went). Pure: the
 * store calls it inside the firing's transaction (ScheduleStore.fireDueSchedules), with the store's clock and the
 * previous run's status, null when there is none or it had ended before the due tick came
 * (lib/store/shared/schedules.ts previousAtTick).
 */
import type { FirePlan, PlanFiring, RunStatus, ScheduleRow } from '../../store/contract';
import { GOING_STATUSES } from '../../store/shared/schedules';
import { nextTick, ticksBetween } from './cron';

/** The due time of a schedule whose expression has no tick to come: a finished schedule, kept for its history. */
export const FINISHED = Number.POSITIVE_INFINITY;

/** A tick fired later than this (or than its period, when shorter) is missed, not late: catch-up `none` drops it. */
export const ON_TIME_SECONDS = 60;

export const planFiring: PlanFiring = (schedule, { now, previous }) => plan(schedule, now, previous);

export function plan(
  schedule: Pick<ScheduleRow, 'cron' | 'timeZone' | 'nextFireAt' | 'overlap' | 'catchUp' | 'catchUpCap'>,
  now: number,
  previous: RunStatus | null,
): FirePlan {
  const going = previous !== null && GOING_STATUSES.includes(previous);
  if (going && schedule.overlap === 'queue')
    return { ticks: [], nextFireAt: schedule.nextFireAt, defer: true, cancelPrevious: false };
  // An expression with no tick to come (a year that has passed) fires what is due, and then is never due again:
  // held at its due time instead, it never fired its last tick and took a place in every firing's pick for good.
  const next = nextTick(schedule.cron, schedule.timeZone, now) ?? FINISHED;
  if (going && schedule.overlap === 'skip') return { ticks: [], nextFireAt: next, defer: false, cancelPrevious: false };
  // An ended previous run here went on past the due tick, so `queue` held that tick, and promised it a run when the
  // run ended, however late that is: it is not a missed tick. The ticks after it are, and catch-up decides them;
  // `none` keeps none, as even one on time now would be late by the time the held tick's run ends.
  const held = schedule.overlap === 'queue' && previous !== null ? firstTick(schedule, now) : undefined;
  const limit = schedule.catchUp === 'all' ? Math.max(1, schedule.catchUpCap) : 1;
  const from = held === undefined ? schedule.nextFireAt : held + 1;
  const due = ticksBetween(schedule.cron, schedule.timeZone, from, now, limit);
  const kept = held !== undefined && schedule.catchUp === 'none' ? [] : caughtUp(due, schedule.catchUp, now, next);
  const ticks = held === undefined ? kept : [held, ...kept];
  // `queue` runs one at a time: the first tick fires, and the next is left due, the schedule's next tick. Its run
  // is the previous one now, going, so the store's pick passes the schedule by until it ends; then that tick is the
  // held one, and the ticks after it are read again from the cron (the cap counted from it), so nothing but
  // `nextFireAt` remembers them, and a firing that dies uncommitted leaves it as it was.
  if (schedule.overlap === 'queue')
    return { ticks: ticks.slice(0, 1), nextFireAt: ticks[1] ?? next, defer: false, cancelPrevious: false };
  return { ticks, nextFireAt: next, defer: false, cancelPrevious: going && schedule.overlap === 'cancel' };
}

/** The schedule's first tick due: the first at or after its `nextFireAt`, if it has come. */
function firstTick(schedule: Pick<ScheduleRow, 'cron' | 'timeZone' | 'nextFireAt'>, now: number): number | undefined {
  // Ticks are whole seconds, and nextTick takes the first strictly after: a second before takes nextFireAt in.
  const first = nextTick(schedule.cron, schedule.timeZone, Math.ceil(schedule.nextFireAt) - 1);
  return first !== null && first <= now ? first : undefined;
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
