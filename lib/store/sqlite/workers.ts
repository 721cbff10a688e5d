/**
 * Workers on SQLite. A SQLite file is shared on one machine, where a worker's pid is the proof of its death
 * (machine.ts): there is no lock to hold, and liveness is `unknown` here; the engine judges by pid.
 */
import { and, desc, eq, getTableColumns, isNull } from 'drizzle-orm';
import { claims, workers } from '../schema.sqlite';
import type { WorkerRow, WorkerStore } from '../types';
import { guard, type SqliteConnection } from './connection';

export function sqliteWorkers(c: SqliteConnection): WorkerStore {
  const { orm } = c;
  const stop = (id: string, now: number) =>
    orm
      .update(workers)
      .set({ stoppedAt: now })
      .where(and(eq(workers.id, id), isNull(workers.stoppedAt)))
      .run();

  return {
    async registerWorker(worker) {
      const now = c.now();
      const row = {
        host: worker.host,
        pid: worker.pid,
        machine: worker.machine ?? null,
        startedAt: now,
        heartbeatAt: now,
      };
      guard(() =>
        orm
          .insert(workers)
          .values({ id: worker.id, ...row })
          .onConflictDoUpdate({ target: workers.id, set: { ...row, stoppedAt: null } })
          .run(),
      );
    },

    async heartbeatWorker(id) {
      const now = c.now();
      guard(() => orm.update(workers).set({ heartbeatAt: now }).where(eq(workers.id, id)).run());
    },

    async stopWorker(id) {
      const now = c.now();
      guard(() => stop(id, now));
    },

    async listWorkers(): Promise<WorkerRow[]> {
      const { workflowsJson: _, ...columns } = getTableColumns(workers);
      return guard(() => orm.select(columns).from(workers).orderBy(desc(workers.startedAt)).all());
    },

    async holdLiveness() {
      return { release: async () => undefined };
    },

    async livenessOf(workerIds) {
      return new Map(workerIds.map((id) => [id, 'unknown' as const]));
    },

    async markWorkerDead(id, reason) {
      const now = c.now();
      return c.tx(() => {
        stop(id, now);
        const held = orm
          .select({ idemKey: claims.idemKey, runId: claims.runId, step: claims.step, attempt: claims.attempt })
          .from(claims)
          .where(eq(claims.workerId, id))
          .all();
        for (const claim of held) {
          orm
            .delete(claims)
            .where(and(eq(claims.idemKey, claim.idemKey), eq(claims.workerId, id)))
            .run();
          c.event(
            {
              runId: claim.runId,
              idemKey: claim.idemKey,
              step: claim.step,
              outcome: 'expired',
              workerId: id,
              detail: `worker ${id} died (${reason}); claim released, the step runs again`,
              attempt: claim.attempt,
            },
            now,
          );
        }
        return held.length;
      });
    },
  };
}
