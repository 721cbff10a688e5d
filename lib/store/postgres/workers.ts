/**
 * Workers on PostgreSQL, and their proof of life for workers on other machines, where no pid can be looked
 * up: each worker holds a session advisory lock for as long as it runs, on a connection of its own.
 * PostgreSQL drops a session whose client process died (its kernel closes the socket, wherever it ran), and
 * the lock with it; so a lock nobody holds means the process is gone, or has lost its connection. The second
 * is why the judge (the engine's worker) also wants the peer silent — no heartbeat — over several looks
 * before it calls it dead.
 *
 * The lock's key is (WAYBILL_LIVENESS, hashtext(schema:worker id)), so stores in different schemas of one
 * database never see each other's workers. pg_locks is read, never locked, by those who look.
 */
import { and, asc, desc, eq, getTableColumns, inArray, isNotNull, isNull, or, type SQL, sql } from 'drizzle-orm';
import type pg from 'pg';
import { DIED_CLAIM_DETAIL } from '../../domain/claim-expiry';
import type { WorkerRow, WorkerStore } from '../contract';
import { claims, runs, stepEvents, workers } from '../schema/pg';
import type { PgConnection } from './connection';
import { notifyRunnable } from './notify';
import { withRetry } from './retry';

/** 'WYB1': the first key of every liveness lock, so they are easy to tell apart in pg_locks. */
const WAYBILL_LIVENESS = 0x57594231;

const KEY = (id: string) => `hashtext(current_schema() || ':' || ${id})`;

/**
 * CTEs `passed` and `woken` for a statement whose `t` is (SELECT now): the run leases a worker marked stopped still
 * holds end now, so its runs are runnable from this commit on, by the lease alone (the pick never reads workers),
 * and the idle workers are woken for them. A run taken over meanwhile has another owner and is left alone; a
 * lease already past is left as it was, so a repeat changes nothing.
 */
const passLeases = (worker: SQL) => sql`passed AS (UPDATE ${runs} r SET lease_expires_at = t.now FROM t
    WHERE r.owner = ${worker} AND r.status = 'running' AND (r.lease_expires_at IS NULL OR r.lease_expires_at > t.now)
    RETURNING r.workflow),
  woken AS (SELECT ${notifyRunnable(sql`passed.workflow`)} FROM passed)`;

export interface LivenessHold {
  release(): Promise<void>;
}

/**
 * Takes the worker's lock on a connection of its own and keeps it: a connection lost (the server restarted,
 * an operator's pg_terminate_backend) is replaced and the lock taken again, until release(). Never waits on the
 * lock: held by another session (an older process under the same worker id, still alive), it is tried again
 * every second, and meanwhile that session's lock speaks for the id.
 */
export async function holdLiveness(pool: pg.Pool, workerId: string): Promise<LivenessHold> {
  let released = false;
  let current: { client: pg.PoolClient; gone: boolean } | null = null;
  let retry: NodeJS.Timeout | undefined;
  const again = (ms: number) => {
    if (!released) retry = setTimeout(() => void take(), ms);
  };
  const drop = (held: { client: pg.PoolClient; gone: boolean }) => {
    if (held.gone) return;
    held.gone = true;
    // Destroyed, not returned to the pool: closing the session is what lets the lock go.
    held.client.release(true);
  };
  const take = async (): Promise<void> => {
    let held: { client: pg.PoolClient; gone: boolean } | null = null;
    try {
      held = { client: await pool.connect(), gone: false };
      const mine = held;
      const lost = () => {
        // The session is gone, and the lock with it: take it again on a new connection.
        const wasHolding = current === mine;
        drop(mine);
        if (wasHolding) {
          current = null;
          again(100);
        }
      };
      mine.client.on('error', lost);
      mine.client.on('end', lost);
      const { rows } = await mine.client.query<{ locked: boolean }>({
        text: `SELECT pg_try_advisory_lock(${WAYBILL_LIVENESS}, ${KEY('$1::text')}) AS locked`,
        values: [workerId],
      });
      if (released || !rows[0]?.locked) {
        drop(mine);
        again(1000);
        return;
      }
      current = mine;
    } catch {
      if (held) drop(held);
      again(500);
    }
  };
  await take();
  return {
    async release() {
      released = true;
      clearTimeout(retry);
      if (current) drop(current);
      current = null;
    },
  };
}

/** For each worker id, whether some session holds its liveness lock now. */
export async function livenessOf(pool: pg.Pool, workerIds: string[]): Promise<Map<string, 'held' | 'free'>> {
  if (workerIds.length === 0) return new Map();
  const { rows } = await pool.query<{ id: string; held: boolean }>({
    name: 'waybill_worker_liveness',
    text: `SELECT w.id, EXISTS (SELECT 1 FROM pg_locks l WHERE l.locktype = 'advisory' AND l.granted
        AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
        AND l.classid = ${WAYBILL_LIVENESS}::oid AND l.objsubid = 2
        AND l.objid = ((${KEY('w.id')})::bigint & 4294967295)::oid) AS held
      FROM unnest($1::text[]) AS w(id)`,
    values: [workerIds],
  });
  return new Map(rows.map((r) => [r.id, r.held ? 'held' : 'free']));
}

/**
 * `session`: the pool the liveness locks are held on, which must keep a session (the store's pool, or the one
 * opened on WAYBILL_PG_SESSION_URL when the main URL goes through a transaction pooler).
 */
export function postgresWorkers(c: PgConnection, session: pg.Pool = c.pool): WorkerStore {
  return {
    async registerWorker(worker) {
      // The database's clock, skewed: now() is one instant per statement, so started and heartbeat agree.
      const row = {
        host: worker.host,
        pid: worker.pid,
        machine: worker.machine ?? null,
        slots: worker.slots ?? null,
        startedAt: c.now(),
        heartbeatAt: c.now(),
      };
      await withRetry('registerWorker', () =>
        c.orm
          .insert(workers)
          .values({ id: worker.id, ...row })
          .onConflictDoUpdate({ target: workers.id, set: { ...row, stoppedAt: null } }),
      );
    },

    async heartbeatWorker(id) {
      const beat = await withRetry('heartbeatWorker', () =>
        c.orm.update(workers).set({ heartbeatAt: c.now() }).where(eq(workers.id, id)),
      );
      return beat.rowCount === 1;
    },

    /** Stopped, and the run leases it still holds passed (see PASS_LEASES); safe to repeat. */
    async stopWorker(id) {
      const worker = sql`${id}::text`;
      await c.query(sql`WITH t AS (SELECT ${c.now()} AS now),
        stopped AS (UPDATE ${workers} SET stopped_at = t.now FROM t WHERE ${workers.id} = ${worker} AND ${workers.stoppedAt} IS NULL),
        ${passLeases(worker)}
        SELECT (SELECT count(*) FROM woken)::int AS woken`);
    },

    async listWorkers(filter = {}): Promise<WorkerRow[]> {
      const { workflowsJson: _, ...columns } = getTableColumns(workers);
      const owners = c.orm
        .select({ owner: runs.owner })
        .from(runs)
        .where(and(eq(runs.status, 'running'), isNotNull(runs.owner)));
      const query = () => {
        const q = c.orm
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
        return filter.limit === undefined ? q : q.limit(filter.limit);
      };
      return withRetry('listWorkers', () => query());
    },

    /** By the database's clock, as every heartbeat and stop was written; a plain DELETE, safe to retry. */
    async pruneWorkers(olderThanMs) {
      const pruned = await c.query(
        sql`DELETE FROM ${workers} w WHERE coalesce(w.stopped_at, w.heartbeat_at) < ${c.now()} - ${olderThanMs / 1000}::float8
          AND NOT EXISTS (SELECT 1 FROM ${runs} r WHERE r.owner = w.id AND r.status = 'running')`,
      );
      return pruned.rowCount ?? 0;
    },

    holdLiveness: (workerId) => holdLiveness(session, workerId),

    livenessOf: (workerIds) => withRetry('livenessOf', () => livenessOf(c.pool, workerIds)),

    /**
     * A worker known dead: stopped, its live claims expired now, one `expired` event per claim. Expired, not
     * deleted: the step's next claim takes the key over from the dead holder, so it is told it is in doubt
     * (the dead worker may have done the side effect and died before its commit), as a takeover after a lease
     * passed is; a deleted claim made it a fresh first attempt. A claim taken over meanwhile has another
     * worker_id on its newest version, which the UPDATE re-checks, so it is left alone. Retried as is: a second
     * run finds the worker stopped and its claims expired, and changes nothing. It then counts 0, where the
     * lost first attempt expired them; the count is only ever reported.
     */
    async markWorkerDead(id, reason) {
      const worker = sql`${id}::text`;
      const { rows } = await c.query<{ n: number }>(sql`WITH t AS (SELECT ${c.now()} AS now),
        stopped AS (UPDATE ${workers} SET stopped_at = t.now FROM t WHERE ${workers.id} = ${worker} AND ${workers.stoppedAt} IS NULL),
        ${passLeases(worker)},
        del AS (UPDATE ${claims} SET lease_expires_at = t.now FROM t WHERE ${claims.workerId} = ${worker}
          AND coalesce(${claims.leaseExpiresAt}, 'Infinity'::float8) > t.now RETURNING idem_key, run_id, step, attempt),
        ev AS (INSERT INTO ${stepEvents} (run_id, idem_key, step, outcome, count, worker_id, detail, at, attempt)
          SELECT del.run_id, del.idem_key, del.step, 'expired', 1, ${worker},
            'worker ' || ${worker} || ' died (' || ${reason}::text || '); ' || ${DIED_CLAIM_DETAIL}::text, t.now,
            del.attempt
          FROM del, t)
        SELECT (SELECT count(*) FROM del)::int AS n, (SELECT count(*) FROM woken)::int AS woken`);
      return rows[0]!.n;
    },
  };
}
