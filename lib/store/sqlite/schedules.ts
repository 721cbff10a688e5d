/**
 * Schedules on SQLite. Each firing is one BEGIN IMMEDIATE transaction: the schedule is read again inside it, so of
 * two workers (or processes) firing one tick the second finds it moved on, and the tick's run is inserted if
 * absent, so even a replayed firing names one run.
 */
import { and, asc, eq, inArray, lte, ne, sql } from 'drizzle-orm';
import { ConflictError, NotFoundError } from '../../errors';
import { type FiredTick, type FireOutcome, type ScheduleStore, tickRunId } from '../contract';
import { runs, schedules, workflows } from '../schema/sqlite';
import { GOING_STATUSES, previousAtTick, scheduleRow, tickRunDefaults, ticksChanged } from '../shared/schedules';
import { guard, type SqliteConnection } from './connection';

/**
 * A schedule overlap `queue` holds: its previous run still going. Left out of the due pick, so that however many
 * are held, they never fill its limit ahead of the schedules that can fire; the firing's plan judges each again.
 */
const heldByQueue = sql`${schedules.overlap} = 'queue' AND EXISTS (SELECT 1 FROM ${runs}
  WHERE ${runs.id} = ${schedules.lastRunId} AND ${inArray(runs.status, [...GOING_STATUSES])})`;

export function sqliteSchedules(c: SqliteConnection): ScheduleStore {
  const { orm } = c;
  const get = (name: string) => {
    const row = orm.select().from(schedules).where(eq(schedules.name, name)).get();
    return row ? scheduleRow(row) : null;
  };

  return {
    async createSchedule(s) {
      const now = c.now();
      return c.tx(() => {
        const inserted = orm
          .insert(schedules)
          .values({ ...s, paused: s.paused ? 1 : 0, createdAt: now, updatedAt: now })
          .onConflictDoNothing()
          .run();
        if (inserted.changes === 0) throw new ConflictError(`schedule ${s.name}`);
        return get(s.name)!;
      });
    },

    async upsertDefinedSchedules(workflowNames, declared) {
      const now = c.now();
      c.tx(() => {
        const existing = orm
          .select()
          .from(schedules)
          .where(and(eq(schedules.source, 'definition'), inArray(schedules.workflow, workflowNames)))
          .all();
        const kept = new Set(declared.map((d) => d.name));
        for (const old of existing) {
          if (!kept.has(old.name)) orm.delete(schedules).where(eq(schedules.name, old.name)).run();
        }
        for (const d of declared) {
          const old = get(d.name);
          if (old?.source === 'operator') continue;
          if (!old) {
            orm
              .insert(schedules)
              .values({ ...d, source: 'definition', paused: 0, createdAt: now, updatedAt: now })
              .run();
            continue;
          }
          const { nextFireAt, ...definition } = d;
          orm
            .update(schedules)
            .set({ ...definition, ...(ticksChanged(old, d) ? { nextFireAt } : {}), updatedAt: now })
            .where(eq(schedules.name, d.name))
            .run();
        }
      });
    },

    async listSchedules() {
      return guard(() => orm.select().from(schedules).orderBy(asc(schedules.name)).all().map(scheduleRow));
    },

    async getSchedule(name) {
      return guard(() => get(name));
    },

    async setSchedulePaused(name, paused, nextFireAt) {
      const now = c.now();
      return c.tx(() => {
        const changed =
          orm
            .update(schedules)
            .set({ paused: paused ? 1 : 0, updatedAt: now, ...(nextFireAt === undefined ? {} : { nextFireAt }) })
            .where(and(eq(schedules.name, name), ne(schedules.paused, paused ? 1 : 0)))
            .run().changes > 0;
        const row = get(name);
        if (!row) throw new NotFoundError(`schedule ${name}`);
        return changed ? row : null;
      });
    },

    async deleteSchedule(name) {
      return c.tx(() => orm.delete(schedules).where(eq(schedules.name, name)).run().changes > 0);
    },

    async fireDueSchedules(plan, options = {}) {
      const outcome: FireOutcome = { fired: [], cancel: [] };
      const due = guard(() =>
        orm
          .select({ name: schedules.name })
          .from(schedules)
          .where(and(eq(schedules.paused, 0), lte(schedules.nextFireAt, c.now()), sql`NOT (${heldByQueue})`))
          .orderBy(asc(schedules.nextFireAt))
          .limit(options.limit ?? 100)
          .all(),
      );
      for (const { name } of due) {
        const now = c.now();
        c.tx(() => {
          const schedule = get(name);
          if (!schedule || schedule.paused || schedule.nextFireAt > now) return;
          const last = schedule.lastRunId
            ? orm
                .select({ status: runs.status, finishedAt: runs.finishedAt })
                .from(runs)
                .where(eq(runs.id, schedule.lastRunId))
                .get()
            : undefined;
          const firing = plan(schedule, { now, previous: previousAtTick(last, schedule.nextFireAt) });
          if (firing.defer) return;
          const { totalSteps, priority } = tickRunDefaults(
            orm.select().from(workflows).where(eq(workflows.name, schedule.workflow)).get(),
          );
          const here: FiredTick[] = [];
          for (const tick of firing.ticks) {
            const runId = tickRunId(name, tick);
            const created =
              orm
                .insert(runs)
                .values({
                  id: runId,
                  workflow: schedule.workflow,
                  inputJson: schedule.inputJson,
                  status: 'queued',
                  totalSteps,
                  priority,
                  createdAt: now,
                  updatedAt: now,
                })
                .onConflictDoNothing()
                .run().changes > 0;
            here.push({ schedule: name, tick, runId, created });
          }
          outcome.fired.push(...here);
          if (
            firing.cancelPrevious &&
            schedule.lastRunId &&
            here.length > 0 &&
            !here.some((f) => f.runId === schedule.lastRunId)
          )
            outcome.cancel.push({ schedule: name, runId: schedule.lastRunId });
          orm
            .update(schedules)
            .set({
              nextFireAt: firing.nextFireAt,
              lastTickAt: firing.ticks.at(-1) ?? schedule.lastTickAt,
              lastRunId: here.at(-1)?.runId ?? schedule.lastRunId,
              updatedAt: now,
            })
            .where(eq(schedules.name, name))
            .run();
        });
      }
      return outcome;
    },
  };
}
