/**
 * Workers on SQLite. A SQLite file is shared on one machine, where a worker's pid is the proof of its death
 * (lib/machine.ts): there is no lock to hold, and liveness is `unknown` here; the engine judges by pid.
 */
import { and, asc, desc, eq, getTableColumns, gt, inArray, isNotNull, isNull, or, sql } from 'drizzle-orm';
import { DIED_CLAIM_DETAIL } from '../../domain/claim-expiry';
import type { WorkerRow, WorkerStore } from '../contract';
import { claims, runs, workers } from '../schema/sqlite';
import { guard, type SqliteConnection } from './connection';

export function sqliteWorkers(c: SqliteConnection): WorkerStore {
  const { orm } = c;
  /**
   * Stopped, and the run leases it still holds end now: its runs are runnable from this commit on by the lease
   * alone (the pick never reads workers). A run taken over meanwhile has another owner; a lease already past stays.
   */
  const stop = (id: string, now: number) => {
    orm
      .update(workers)
      .set({ stoppedAt: now })
      .where(and(eq(workers.id, id), isNull(workers.stoppedAt)))
      .run();
    orm
      .update(runs)
      .set({ leaseExpiresAt: now })
      .where(
        and(
          eq(runs.owner, id),
          eq(runs.status, 'running'),
          or(isNull(runs.leaseExpiresAt), sql`${runs.leaseExpiresAt} > ${now}`),
        ),
      )
      .run();
  };

  return {
    async registerWorker(worker) {
      const now = c.now();
      const row = {
        host: worker.host,
        pid: worker.pid,
        machine: worker.machine ?? null,
        slots: worker.slots ?? null,
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
      return guard(() => orm.update(workers).set({ heartbeatAt: now }).where(eq(workers.id, id)).run()).changes === 1;
    },

    async stopWorker(id) {
      const now = c.now();
      c.tx(() => stop(id, now));
    },

    async listWorkers(filter = {}): Promise<WorkerRow[]> {
      const { workflowsJson: _, ...columns } = getTableColumns(workers);
      const owners = orm
        .select({ owner: runs.owner })
        .from(runs)
        .where(and(eq(runs.status, 'running'), isNotNull(runs.owner)));
      const query = orm
        .select(columns)
        .from(workers)
        .where(
          and(
            filter.notStopped
              ? filter.orOwningRunning
                ? or(isNull(workers.stoppedAt), inArray(workers.id, owners))
                : isNull(workers.stoppedAt)
              : undefined,
            filter.ids ? inArray(workers.id, filter.ids) : undefined,
          ),
        )
        .orderBy(asc(sql`${workers.stoppedAt} IS NOT NULL`), desc(workers.startedAt));
      return guard(() => (filter.limit === undefined ? query.all() : query.limit(filter.limit).all()));
    },

    async pruneWorkers(olderThanMs) {
      const before = c.now() - olderThanMs / 1000;
      return guard(
        () =>
          c
            .prepared(`DELETE FROM workers WHERE coalesce(stopped_at, heartbeat_at) < @before
            AND NOT EXISTS (SELECT 1 FROM runs r WHERE r.owner = workers.id AND r.status = 'running')`)
            .run({ before }).changes,
      );
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
          // Live claims: one expired already is taken over as it is.
          .where(and(eq(claims.workerId, id), or(isNull(claims.leaseExpiresAt), gt(claims.leaseExpiresAt, now))))
          .all();
        for (const claim of held) {
          orm
            .update(claims)
            .set({ leaseExpiresAt: now })
            .where(and(eq(claims.idemKey, claim.idemKey), eq(claims.workerId, id)))
            .run();
          c.event(
            {
              runId: claim.runId,
              idemKey: claim.idemKey,
              step: claim.step,
              outcome: 'expired',
              workerId: id,
              detail: `worker ${id} died (${reason}); ${DIED_CLAIM_DETAIL}`,
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
