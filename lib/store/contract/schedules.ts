/**
 * Schedules: a workflow started on a cron expression. The store keeps them and fires their ticks; what a tick
 * is (the cron reading) and what firing makes of the ticks due (overlap, catch-up) is the engine's plan, handed
 * in, because the store reads no cron. Re-exported by index.ts.
 */
import type { RunStatus } from './rows';

export const OVERLAP_POLICIES = ['skip', 'queue', 'cancel'] as const;
export const CATCH_UP_POLICIES = ['none', 'latest', 'all'] as const;
/** What a tick does while the schedule's previous run still goes: not fire, wait for it to end, or cancel it. */
export type OverlapPolicy = (typeof OVERLAP_POLICIES)[number];
/** What firing late (after downtime) makes of the ticks missed: none of them, the latest, or all up to the cap. */
export type CatchUpPolicy = (typeof CATCH_UP_POLICIES)[number];
/** `definition`: declared in a workflow's code and upserted by its workers; `operator`: added at run time. */
export type ScheduleSource = 'definition' | 'operator';

export interface ScheduleDefinition {
  name: string;
  workflow: string;
  cron: string;
  timeZone: string;
  /** The input every tick's run gets, parsed (defaults applied), as JSON text. */
  inputJson: string;
  overlap: OverlapPolicy;
  catchUp: CatchUpPolicy;
  catchUpCap: number;
}

export interface ScheduleRow extends ScheduleDefinition {
  paused: boolean;
  source: ScheduleSource;
  /** Epoch seconds: the next tick not yet fired. */
  nextFireAt: number;
  lastTickAt: number | null;
  lastRunId: string | null;
  createdAt: number;
  updatedAt: number;
}

/** What the engine makes of one due schedule (lib/engine/schedules/policy.ts). */
export interface FirePlan {
  /** Epoch seconds of the ticks to fire now, oldest first: one run each (overlap `queue`: at most one). */
  ticks: number[];
  /**
   * The schedule's next tick after this firing. Overlap `queue` may leave one that has come already (a tick
   * catch-up kept, to fire when this firing's run ends): the schedule stays due, and its going run holds it.
   */
  nextFireAt: number;
  /** Overlap `queue` with the previous run still going: nothing is written, the schedule stays due. */
  defer: boolean;
  /** Overlap `cancel`: the previous run is to be cancelled (by the caller, with its event and actor). */
  cancelPrevious: boolean;
}

/** Called inside the firing's transaction: synchronous and pure. `now` is the store's clock, epoch seconds. */
export type PlanFiring = (schedule: ScheduleRow, at: { now: number; previous: RunStatus | null }) => FirePlan;

/** One tick fired: its run, and whether this call created it (false: another worker had, before). */
export interface FiredTick {
  schedule: string;
  tick: number;
  runId: string;
  created: boolean;
}

export interface FireOutcome {
  fired: FiredTick[];
  /** Previous runs the plans said to cancel (overlap `cancel`), for the caller to act on. */
  cancel: { schedule: string; runId: string }[];
}

export interface ScheduleStore {
  /** ConflictError when the name is taken. */
  createSchedule(
    schedule: ScheduleDefinition & { source: ScheduleSource; nextFireAt: number; paused?: boolean },
  ): Promise<ScheduleRow>;
  /**
   * The schedules a worker's workflows declare, in one transaction: new ones are created, changed ones take the
   * new definition (and `nextFireAt` when the cron or time zone changed), a paused one stays paused. Rows of
   * `operator` source under the same name are left alone. Declared schedules of these workflows that the code no
   * longer declares are deleted.
   */
  upsertDefinedSchedules(
    workflows: string[],
    schedules: (ScheduleDefinition & { nextFireAt: number })[],
  ): Promise<void>;
  /** By name. */
  listSchedules(): Promise<ScheduleRow[]>;
  getSchedule(name: string): Promise<ScheduleRow | null>;
  /**
   * Pauses or resumes a schedule that is not so already; null, with nothing written, when it is. The write itself
   * decides, so of calls at once exactly one changes the row. NotFoundError for an unknown name. Resuming takes
   * the next tick from now, so a pause is never caught up.
   */
  setSchedulePaused(name: string, paused: boolean, nextFireAt?: number): Promise<ScheduleRow | null>;
  /** False when there was none. The runs it fired stay. */
  deleteSchedule(name: string): Promise<boolean>;
  /**
   * Fires every unpaused schedule whose next tick has come, one transaction each: the plan's ticks become runs
   * named `tickRunId(schedule, tick)`, inserted if absent, and the schedule moves to the plan's next tick. Two
   * workers firing one tick make one run; a worker dying mid-firing leaves the tick due. On PostgreSQL a schedule
   * another worker is firing is skipped (FOR UPDATE SKIP LOCKED), never waited on.
   */
  fireDueSchedules(plan: PlanFiring, options?: { limit?: number }): Promise<FireOutcome>;
}

/** A tick's run id: the schedule and the tick, so every firing of one tick names one run. */
export function tickRunId(schedule: string, tick: number): string {
  return `${schedule}:${new Date(tick * 1000).toISOString().replace('.000Z', 'Z')}`;
}
