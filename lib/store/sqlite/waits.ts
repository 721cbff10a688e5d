/**
 * Durable waits on SQLite (types-waits.ts). Every write is one BEGIN IMMEDIATE transaction, so a decision and
 * a park are serialized by the write lock: a park sees a decision committed before it, and a decision made
 * after a park finds the run `waiting` and flips it to `queued` in the same transaction.
 */
import { and, asc, eq, isNull } from 'drizzle-orm';
import { NotFoundError } from '../../errors';
import { runs, waits } from '../schema.sqlite';
import type { WaitKind, WaitRow, WaitStore } from '../types';
import { decisionDetail, kindMismatch, WAITING_SUMMARY } from '../waits-shared';
import { guard, type SqliteConnection } from './connection';

export function sqliteWaits(c: SqliteConnection): WaitStore {
  const { orm } = c;
  const get = (runId: string, name: string): WaitRow | undefined =>
    orm
      .select()
      .from(waits)
      .where(and(eq(waits.runId, runId), eq(waits.name, name)))
      .get();

  return {
    async getWait(runId, name) {
      return guard(() => get(runId, name) ?? null);
    },

    async listWaits(runId) {
      return guard(() =>
        orm.select().from(waits).where(eq(waits.runId, runId)).orderBy(asc(waits.createdAt), asc(waits.name)).all(),
      );
    },

    async recordWait(wait) {
      const now = c.now();
      const dueAt = wait.dueAt ?? (wait.dueInMs == null ? null : now + wait.dueInMs / 1000);
      return c.tx(() => {
        orm
          .insert(waits)
          .values({
            runId: wait.runId,
            name: wait.name,
            kind: wait.kind,
            detailsJson: wait.detailsJson ?? null,
            createdAt: now,
            dueAt,
            onTimeout: wait.onTimeout ?? null,
          })
          .onConflictDoNothing()
          .run();
        return get(wait.runId, wait.name)!;
      });
    },

    async decideWait(d) {
      const now = c.now();
      return c.tx(() => {
        const run = orm.select({ status: runs.status }).from(runs).where(eq(runs.id, d.runId)).get();
        if (!run) throw new NotFoundError(`run ${d.runId}`);
        let wait = get(d.runId, d.name);
        if (!wait && d.createIfAbsent) {
          orm.insert(waits).values({ runId: d.runId, name: d.name, kind: d.kind, createdAt: now }).run();
          wait = get(d.runId, d.name)!;
        }
        if (!wait) throw new NotFoundError(`wait ${d.name} of run ${d.runId}`);
        if (wait.kind !== d.kind) throw kindMismatch(wait, d.kind);
        const won =
          orm
            .update(waits)
            .set({ decidedAt: now, decisionJson: d.decisionJson, decidedBy: d.decidedBy, note: d.note ?? null })
            .where(and(eq(waits.runId, d.runId), eq(waits.name, d.name), isNull(waits.decidedAt)))
            .run().changes === 1;
        if (won) {
          orm
            .update(runs)
            .set({ status: 'queued', updatedAt: now })
            .where(and(eq(runs.id, d.runId), eq(runs.status, 'waiting')))
            .run();
          c.event(
            {
              runId: d.runId,
              outcome: 'operator',
              detail: decisionDetail(d.kind, d.name, d.decisionJson, d.decidedBy, d.note),
            },
            now,
          );
        }
        return { decided: won, wait: get(d.runId, d.name)! };
      });
    },

    async parkRun(runId, name, workerId, attempt) {
      const now = c.now();
      return c.tx(() => {
        if (get(runId, name)?.decidedAt != null) return 'decided' as const;
        const parked = orm
          .update(runs)
          .set({ status: 'waiting', owner: null, leaseExpiresAt: null, updatedAt: now })
          .where(
            and(eq(runs.id, runId), eq(runs.owner, workerId), eq(runs.attempts, attempt), eq(runs.status, 'running')),
          )
          .run();
        return parked.changes === 1 ? ('parked' as const) : ('lost' as const);
      });
    },

    async waitingSummary() {
      return guard(() =>
        c
          .prepared<{ now: number }, { kind: WaitKind; runs: number; oldestAt: number; ageSeconds: number }>(
            WAITING_SUMMARY('@now'),
          )
          .all({ now: c.now() }),
      );
    },
  };
}
