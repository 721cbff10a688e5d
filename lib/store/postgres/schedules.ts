/**
 * Schedules on PostgreSQL, with sqlite/schedules.ts's semantics. A firing locks its schedule's row with
 * FOR UPDATE SKIP LOCKED and checks it is still due, so workers firing at once share the due schedules instead
 * of queueing behind each other, and a tick one has fired is not due to the next. The tick's run is inserted
 * ON CONFLICT DO NOTHING under its derived id: a firing retried after a lost answer, or replayed by a worker
 * that took over from one killed mid-commit, names the same run. Times are the database's clock.
 */
import { and, asc, eq, inArray, lte, ne, sql } from 'drizzle-orm';
import { drizzle } from 'drizzle-orm/node-postgres';
import { ConflictError, NotFoundError } from '../../errors';
import { type FireOutcome, type ScheduleStore, tickRunId } from '../contract';
import { runs, schedules, workflows } from '../schema/pg';
import { GOING_STATUSES, previousAtTick, scheduleRow, tickRunDefaults, ticksChanged } from '../shared/schedules';
import type { PgConnection } from './connection';
import { withRetry, writeOnce } from './retry';

/**
 * A schedule overlap `queue` holds: its previous run still going. Left out of the due pick, so that however many
 * are held, they never fill its limit ahead of the schedules that can fire; the firing's plan judges each again.
 */
const heldByQueue = sql`${schedules.overlap} = 'queue' AND EXISTS (SELECT 1 FROM ${runs}
  WHERE ${runs.id} = ${schedules.lastRunId} AND ${inArray(runs.status, [...GOING_STATUSES])})`;

export function postgresSchedules(c: PgConnection): ScheduleStore {
  const { orm } = c;
  const get = async (name: string) => {
    const [row] = await orm.select().from(schedules).where(eq(schedules.name, name));
    return row ? scheduleRow(row) : null;
  };

  return {
    async createSchedule(s) {
      const inserted = await withRetry('createSchedule', () =>
        orm
          .insert(schedules)
          .values({ ...s, paused: s.paused ? 1 : 0, createdAt: c.now(), updatedAt: c.now() })
          .onConflictDoNothing()
          .returning(),
      );
      if (inserted.length === 0) throw new ConflictError(`schedule ${s.name}`);
      return scheduleRow(inserted[0]!);
    },

    /** Retried whole: the upserts and deletes are idempotent. */
    async upsertDefinedSchedules(workflowNames, declared) {
      await withRetry('upsertDefinedSchedules', () =>
        c.inTransaction(async (client) => {
          const tx = drizzle(client);
          const existing = await tx
            .select()
            .from(schedules)
            .where(and(eq(schedules.source, 'definition'), inArray(schedules.workflow, workflowNames)))
            .for('update');
          const kept = new Set(declared.map((d) => d.name));
          for (const old of existing) {
            if (!kept.has(old.name)) await tx.delete(schedules).where(eq(schedules.name, old.name));
          }
          for (const d of declared) {
            const [old] = await tx.select().from(schedules).where(eq(schedules.name, d.name)).for('update');
            if (old?.source === 'operator') continue;
            if (!old) {
              await tx
                .insert(schedules)
                .values({ ...d, source: 'definition', paused: 0, createdAt: c.now(), updatedAt: c.now() })
                .onConflictDoNothing();
              continue;
            }
            const { nextFireAt, ...definition } = d;
            await tx
              .update(schedules)
              .set({ ...definition, ...(ticksChanged(old, d) ? { nextFireAt } : {}), updatedAt: c.now() })
              .where(eq(schedules.name, d.name));
          }
        }),
      );
    },

    async listSchedules() {
      const rows = await withRetry('listSchedules', () => orm.select().from(schedules).orderBy(asc(schedules.name)));
      return rows.map(scheduleRow);
    },

    getSchedule: (name) => withRetry('getSchedule', () => get(name)),

    setSchedulePaused: (name, paused, nextFireAt) =>
      writeOnce(
        'setSchedulePaused',
        async () => {
          const [updated] = await orm
            .update(schedules)
            .set({ paused: paused ? 1 : 0, updatedAt: c.now(), ...(nextFireAt === undefined ? {} : { nextFireAt }) })
            .where(and(eq(schedules.name, name), ne(schedules.paused, paused ? 1 : 0)))
            .returning();
          return updated && scheduleRow(updated);
        },
        () => get(name),
        (row) => row.paused === paused,
        () => new NotFoundError(`schedule ${name}`),
      ),

    async deleteSchedule(name) {
      const gone = await withRetry('deleteSchedule', () =>
        orm.delete(schedules).where(eq(schedules.name, name)).returning({ name: schedules.name }),
      );
      return gone.length > 0;
    },

    async fireDueSchedules(plan, options = {}) {
      const outcome: FireOutcome = { fired: [], cancel: [] };
      const due = await withRetry('fireDueSchedules', () =>
        orm
          .select({ name: schedules.name })
          .from(schedules)
          .where(and(eq(schedules.paused, 0), lte(schedules.nextFireAt, c.now()), sql`NOT (${heldByQueue})`))
          .orderBy(asc(schedules.nextFireAt))
          .limit(options.limit ?? 100),
      );
      for (const { name } of due) {
        // Retried whole: a lost commit is found out by the next attempt, which finds the schedule moved on.
        const one = await withRetry('fireSchedule', () =>
          c.inTransaction(async (client) => {
            const tx = drizzle(client);
            const [row] = await tx
              .select({ row: schedules, now: sql<number>`${c.now()}` })
              .from(schedules)
              .where(and(eq(schedules.name, name), eq(schedules.paused, 0), lte(schedules.nextFireAt, c.now())))
              .for('update', { skipLocked: true });
            if (!row) return null;
            const schedule = scheduleRow(row.row);
            const now = Number(row.now);
            const [last] = schedule.lastRunId
              ? await tx
                  .select({ status: runs.status, finishedAt: runs.finishedAt })
                  .from(runs)
                  .where(eq(runs.id, schedule.lastRunId))
              : [];
            const firing = plan(schedule, { now, previous: previousAtTick(last, schedule.nextFireAt) });
            if (firing.defer) return null;
            const [workflow] = await tx.select().from(workflows).where(eq(workflows.name, schedule.workflow));
            const { totalSteps, priority } = tickRunDefaults(workflow);
            const fired: FireOutcome['fired'] = [];
            for (const tick of firing.ticks) {
              const runId = tickRunId(name, tick);
              const created = await tx
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
                .returning({ id: runs.id });
              fired.push({ schedule: name, tick, runId, created: created.length > 0 });
            }
            await tx
              .update(schedules)
              .set({
                nextFireAt: firing.nextFireAt,
                lastTickAt: firing.ticks.at(-1) ?? schedule.lastTickAt,
                lastRunId: fired.at(-1)?.runId ?? schedule.lastRunId,
                updatedAt: now,
              })
              .where(eq(schedules.name, name));
            const cancel =
              firing.cancelPrevious &&
              schedule.lastRunId &&
              fired.length > 0 &&
              !fired.some((f) => f.runId === schedule.lastRunId)
                ? { schedule: name, runId: schedule.lastRunId }
                : null;
            return { fired, cancel };
          }),
        );
        if (!one) continue;
        outcome.fired.push(...one.fired);
        if (one.cancel) outcome.cancel.push(one.cancel);
      }
      return outcome;
    },
  };
}
