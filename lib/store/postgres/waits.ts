/**
 * Durable waits on PostgreSQL, with sqlite/waits.ts's semantics. A park and a decision meet on the wait's row
 * lock: parkRun locks the wait (FOR UPDATE) before it parks the run, and decideWait's conditional UPDATE locks
 * it before it flips the run. Whichever locks first commits first; the other then reads the newest version
 * (READ COMMITTED re-reads a locked row once it is released): a park that comes second sees the decision and
 * does not park; a decision that comes second finds the run `waiting` and queues it. No wake is ever lost.
 */

import { and, asc, eq, isNull, lte, type SQL, sql } from 'drizzle-orm';
import { drizzle } from 'drizzle-orm/node-postgres';
import type pg from 'pg';
import { NotFoundError } from '../../errors';
import type { RunRow, RunStatus, WaitDecision, WaitingKind, WaitKind, WaitRow, WaitStore } from '../contract';
import { runs, stepEvents, waits } from '../schema/pg';
import { CHILD_DECIDER, type ChildOutcome, childDecisionJson, childDetail, reopenedDetail } from '../shared/children';
import { announceWake, onLocalWake } from '../shared/local-wakes';
import { CHILD_READER, FORK_LINEAGE, keptDetail, nextEndPrefix, readDetail, replacedDetail } from '../shared/rewind';
import { decisionDetail, refuseOverLimit, WAITING_SUMMARY } from '../shared/waits';
import { approvalEvent } from '../shared/webhooks';
import { WAIT as WAIT_LIST } from './columns';
import { dbNowText, type PgConnection } from './connection';
import { withRetry } from './retry';
import { enqueueIn } from './webhooks';

/**
 * The claim's "a parked run whose time came": the run `run` has an open wait due by `now`. postgres/runs.ts's
 * pick embeds it; nextWakeIn looks for the first not yet due. As sqlite/waits.ts's dueWait.
 */
export const dueWait = (run: SQL, now: SQL) =>
  // A scalar subquery, looked up by the run's key for each waiting run met: as EXISTS the planner may hash every
  // wait ever due instead, decided ones included (test/postgres/pick-plan.test.ts).
  sql`(SELECT min(dw.due_at) FROM waits dw WHERE dw.run_id = ${run} AND dw.decided_at IS NULL) <= ${now}`;

/**
 * A decision made the run runnable: a parked (`waiting`) run goes back to `queued`, inside the decision's
 * transaction. The one place a decision wakes a run: a NOTIFY for other processes belongs here, where it is
 * sent at commit or not at all. False when the run was not parked (a signal sent ahead, a paused run).
 */
async function wakeRun(c: PgConnection, client: pg.PoolClient, runId: string): Promise<boolean> {
  const woken = await c.once(
    sql`UPDATE ${runs} SET status = 'queued', updated_at = ${c.now()} WHERE id = ${runId} AND status = 'waiting'`,
    undefined,
    client,
  );
  return woken.rowCount === 1;
}

/**
 * A child run ended (finishRun, a cancel): its parent's `child` wait named for it is decided with how, created
 * decided if the parent has not reached it yet, and a parent that reached it woken, in the caller's transaction.
 * So are the copies of that wait its parent's forks hold. The decision locks the wait's row as decideWait's does,
 * so it meets a park the same way. An end after the first (an operator retried the child) goes to settleAgain,
 * as on SQLite (sqlite/waits.ts). The parent's id when it woke or was queued anew (announce it after the commit),
 * else null.
 */
export async function settleChild(c: PgConnection, client: pg.PoolClient, child: RunRow): Promise<string | null> {
  const parent = child.parentRunId;
  if (parent === null) return null;
  await settleForks(c, client, child, parent);
  // A row made here is one the parent has not reached: it will find it decided, and is not woken for it (it may
  // be parked on another child, or waiting for a person).
  const ahead = await c.once(
    sql`INSERT INTO ${waits} (run_id, name, kind, created_at) VALUES (${parent}, ${child.id}, 'child', ${c.now()})
    ON CONFLICT (run_id, kind, name) DO NOTHING`,
    undefined,
    client,
  );
  const won = await c.once(
    sql`UPDATE ${waits} w SET decided_at = ${c.now()}, decision_json = ${childDecisionJson(child)},
      decided_by = ${CHILD_DECIDER}
    WHERE w.run_id = ${parent} AND w.kind = 'child' AND w.name = ${child.id} AND w.decided_at IS NULL`,
    undefined,
    client,
  );
  if (won.rowCount !== 1) return settleAgain(c, client, child, parent);
  await operatorEvent(c, client, parent, childDetail(child));
  return ahead.rowCount === 0 && (await wakeRun(c, client, parent)) ? parent : null;
}

/** FORK_LINEAGE around its one parameter, the run whose forks it lists. */
const [LINEAGE_HEAD, LINEAGE_TAIL] = FORK_LINEAGE.split('?') as [string, string];

const operatorEvent = (c: PgConnection, client: pg.PoolClient, runId: string, detail: string) =>
  c.once(
    sql`INSERT INTO ${stepEvents} (run_id, outcome, count, detail, at) VALUES (${runId}, 'operator', 1, ${detail}, ${c.now()})`,
    undefined,
    client,
  );

/**
 * The open waits for the child that forks of its parent copied, decided as the parent's is (sqlite/waits.ts
 * settleForks). A fork copies them with the child's row locked (FOR SHARE), so a fork and the child's end never
 * miss each other: the one that comes second sees the other's rows.
 */
async function settleForks(c: PgConnection, client: pg.PoolClient, child: RunRow, parent: string): Promise<void> {
  const decided = await c.once<{ runId: string }>(
    sql`UPDATE ${waits} SET decided_at = ${c.now()}, decision_json = ${childDecisionJson(child)}, decided_by = ${CHILD_DECIDER}
    WHERE kind = 'child' AND name = ${child.id} AND decided_at IS NULL
      AND run_id IN (${sql.raw(LINEAGE_HEAD)}${parent}${sql.raw(LINEAGE_TAIL)})
    RETURNING run_id AS "runId"`,
    undefined,
    client,
  );
  // A fork woken here is found by the next look of a worker: the caller announces one run, its parent.
  for (const { runId } of decided.rows) {
    await operatorEvent(c, client, runId, childDetail(child));
    await wakeRun(c, client, runId);
  }
}

/**
 * The child ended again, its parent's wait decided by an earlier end: an end that did not complete is replaced by
 * this one unless the parent has acted on it, a running parent's execution is fenced off, and the parent's open
 * waits for the next end are decided (sqlite/waits.ts settleAgain says why). The parent's row is locked first: a
 * claim of its execution takes it FOR KEY SHARE, so none slips in between the look at its claims and the fence.
 */
async function settleAgain(
  c: PgConnection,
  client: pg.PoolClient,
  child: RunRow,
  parent: string,
): Promise<string | null> {
  const run = (
    await c.once<{ status: RunStatus; owner: string | null }>(
      sql`SELECT status, owner FROM ${runs} WHERE id = ${parent} FOR UPDATE`,
      undefined,
      client,
    )
  ).rows[0];
  const wait = await c.once<{ decisionJson: string | null; decidedAt: number }>(
    sql`SELECT decision_json AS "decisionJson", decided_at AS "decidedAt" FROM ${waits}
    WHERE run_id = ${parent} AND kind = 'child' AND name = ${child.id}`,
    undefined,
    client,
  );
  const decision = wait.rows[0]?.decisionJson;
  if (!run || !decision) return null;
  const was = JSON.parse(decision) as ChildOutcome;
  if (was.status === 'completed') return null;
  const acted = await actedOn(c, client, parent, run.status, child.id, Number(wait.rows[0]!.decidedAt));
  if (acted) {
    await operatorEvent(c, client, parent, keptDetail(child, was));
  } else {
    await c.once(
      sql`UPDATE ${waits} SET decided_at = ${c.now()}, decision_json = ${childDecisionJson(child)}, decided_by = ${CHILD_DECIDER}
      WHERE run_id = ${parent} AND kind = 'child' AND name = ${child.id}`,
      undefined,
      client,
    );
    await operatorEvent(c, client, parent, replacedDetail(child, was));
    if (run.status === 'paused' && run.owner !== null)
      await c.once(
        sql`UPDATE ${runs} SET owner = NULL, lease_expires_at = NULL, updated_at = ${c.now()}
        WHERE id = ${parent} AND status = 'paused'`,
        undefined,
        client,
      );
  }
  const queued =
    run.status === 'running' &&
    (
      await c.once(
        sql`UPDATE ${runs} SET status = 'queued', owner = NULL, lease_expires_at = NULL, updated_at = ${c.now()}
        WHERE id = ${parent} AND status = 'running'`,
        undefined,
        client,
      )
    ).rowCount === 1;
  const next = await c.once(
    sql`UPDATE ${waits} SET decided_at = ${c.now()}, decision_json = ${childDecisionJson(child)}, decided_by = ${CHILD_DECIDER}
    WHERE run_id = ${parent} AND kind = 'child' AND decided_at IS NULL AND starts_with(name, ${nextEndPrefix(child.id)})`,
    undefined,
    client,
  );
  const woke = (next.rowCount ?? 0) > 0 && (await wakeRun(c, client, parent));
  return queued || woke ? parent : null;
}

/** Whether the parent has acted on the end its wait for `childId` holds (sqlite/waits.ts actedOn). */
async function actedOn(
  c: PgConnection,
  client: pg.PoolClient,
  parent: string,
  status: RunStatus,
  childId: string,
  decidedAt: number,
): Promise<boolean> {
  if (status === 'completed' || status === 'rejected') return true;
  const found = await c.once<{ acted: boolean }>(
    sql`WITH read AS (SELECT min(created_at) AS at FROM ${waits}
        WHERE run_id = ${parent} AND kind = 'child' AND starts_with(name, ${nextEndPrefix(childId)})
          AND created_at >= ${decidedAt}::float8)
    SELECT EXISTS (SELECT 1 FROM claims WHERE run_id = ${parent})
      OR EXISTS (SELECT 1 FROM ${waits} w, read WHERE w.run_id = ${parent} AND w.kind <> 'child' AND w.created_at >= read.at)
      OR EXISTS (SELECT 1 FROM committed, read WHERE run_id = ${parent} AND committed_at >= read.at) AS acted`,
    undefined,
    client,
  );
  return found.rows[0]?.acted === true;
}

/**
 * A retry of the parent brought back a child its cancel had cancelled (postgres/runs.ts retryChildren): the
 * parent's wait for that child, decided with the cancel, is open again unless the parent acted on the cancel, as on
 * SQLite (sqlite/waits.ts reopenChildWait says why). The caller holds the parent's row (the retry's FOR UPDATE) and
 * the child's, so neither the parent's execution nor the child's end can meet this. True when reopened.
 */
export async function reopenChildWait(
  c: PgConnection,
  client: pg.PoolClient,
  parent: string,
  childId: string,
): Promise<boolean> {
  const found = await c.once<{
    decisionJson: string | null;
    decidedBy: string | null;
    decidedAt: number;
    status: RunStatus;
  }>(
    sql`SELECT w.decision_json AS "decisionJson", w.decided_by AS "decidedBy", w.decided_at AS "decidedAt", r.status
    FROM ${waits} w JOIN ${runs} r ON r.id = w.run_id
    WHERE w.run_id = ${parent} AND w.kind = 'child' AND w.name = ${childId} FOR UPDATE OF w`,
    undefined,
    client,
  );
  const wait = found.rows[0];
  if (!wait?.decisionJson || wait.decidedBy !== CHILD_DECIDER) return false;
  if ((JSON.parse(wait.decisionJson) as ChildOutcome).status !== 'cancelled') return false;
  if (await actedOn(c, client, parent, wait.status, childId, Number(wait.decidedAt))) return false;
  await c.once(
    sql`UPDATE ${waits} SET decided_at = NULL, decision_json = NULL, decided_by = NULL, note = NULL
    WHERE run_id = ${parent} AND kind = 'child' AND name = ${childId}`,
    undefined,
    client,
  );
  await operatorEvent(c, client, parent, reopenedDetail(childId));
  return true;
}

/** The timeline's line for a decision: a parent's read of its child's end (the engine's children.ts) says so. */
const decideDetail = (d: WaitDecision): string =>
  d.kind === 'child' && d.decidedBy === CHILD_READER
    ? readDetail(d.name, d.decisionJson)
    : decisionDetail(d.kind, d.name, d.decisionJson, d.decidedBy, d.note);

/** 'WYWT': the advisory locks of signals sent ahead, apart from the run logs' (logs.ts) and workers' (workers.ts). */
const WAITS_ADDED_LOCK = 0x57595754;

const WAIT = sql.raw(WAIT_LIST);

export function postgresWaits(c: PgConnection): WaitStore {
  const get = async (runId: string, kind: WaitKind, name: string, client?: pg.PoolClient): Promise<WaitRow | null> => {
    const query = sql`SELECT ${WAIT} FROM ${waits} w WHERE w.run_id = ${runId} AND w.kind = ${kind} AND w.name = ${name}`;
    return (await (client ? c.once<WaitRow>(query, undefined, client) : c.query<WaitRow>(query))).rows[0] ?? null;
  };

  return {
    getWait: (runId, kind, name) => get(runId, kind, name),

    async openEventWaits(name, recordedBy) {
      return withRetry('openEventWaits', () =>
        c.orm
          .select()
          .from(waits)
          .where(
            and(
              eq(waits.kind, 'event'),
              eq(waits.name, name),
              isNull(waits.decidedAt),
              lte(waits.createdAt, recordedBy),
            ),
          )
          .orderBy(asc(waits.createdAt), asc(waits.runId)),
      );
    },

    async listWaits(runId) {
      return c.readBuilt(
        'listWaits',
        c.orm.select().from(waits).where(eq(waits.runId, runId)).orderBy(asc(waits.createdAt), asc(waits.name)),
      );
    },

    async recordWait(wait) {
      const due =
        wait.dueAt != null
          ? sql`${wait.dueAt}::float8`
          : wait.dueInMs != null
            ? sql`${c.now()} + ${wait.dueInMs / 1000}::float8`
            : sql`NULL::float8`;
      // Safe to repeat: an insert that did land leaves the row for the second attempt to read.
      await c.query(sql`INSERT INTO ${waits} (run_id, name, kind, details_json, created_at, due_at, on_timeout)
        VALUES (${wait.runId}, ${wait.name}, ${wait.kind}, ${wait.detailsJson ?? null}::text, ${c.now()}, ${due}, ${wait.onTimeout ?? null}::text)
        ON CONFLICT (run_id, kind, name) DO NOTHING`);
      return (await get(wait.runId, wait.kind, wait.name))!;
    },

    async decideWait(d) {
      // Not retried on a lost connection: a decision that landed would read as "already decided" on retry,
      // and the caller would be told it lost to itself. The caller sees the store error and asks again.
      const decided = await c.inTransaction(async (client) => {
        const run = await c.once<{ status: string }>(
          sql`SELECT status FROM ${runs} WHERE id = ${d.runId}`,
          undefined,
          client,
        );
        if (run.rowCount === 0) throw new NotFoundError(`run ${d.runId}`);
        if (d.createIfAbsent && !(await get(d.runId, d.kind, d.name, client))) {
          if (d.maxWaits !== undefined) {
            // Two signals sent ahead at the limit's edge take turns here, so they cannot both add a row. Not
            // the run's row lock: parkRun holds a wait's lock while it waits for that one.
            await c.once(
              sql`SELECT pg_advisory_xact_lock(${sql.raw(String(WAITS_ADDED_LOCK))}, hashtext(current_schema() || ':' || ${d.runId}))`,
              undefined,
              client,
            );
            const held = await c.once<{ n: number }>(
              sql`SELECT count(*)::int AS n FROM ${waits} WHERE run_id = ${d.runId}`,
              undefined,
              client,
            );
            // Sent by the one that held the lock before us: then this is a second send, answered as such below.
            if (!(await get(d.runId, d.kind, d.name, client)))
              refuseOverLimit(d.runId, d.name, held.rows[0]!.n, d.maxWaits);
          }
          await c.once(
            sql`INSERT INTO ${waits} (run_id, name, kind, created_at) VALUES (${d.runId}, ${d.name}, ${d.kind}, ${c.now()})
            ON CONFLICT (run_id, kind, name) DO NOTHING`,
            undefined,
            client,
          );
        }
        if (!(await get(d.runId, d.kind, d.name, client)))
          throw new NotFoundError(`${d.kind} ${d.name} of run ${d.runId}`);
        const won = await c.once<WaitRow>(
          sql`UPDATE ${waits} w SET decided_at = ${c.now()}, decision_json = ${d.decisionJson},
            decided_by = ${d.decidedBy}, note = ${d.note ?? null}::text
          WHERE w.run_id = ${d.runId} AND w.kind = ${d.kind} AND w.name = ${d.name} AND w.decided_at IS NULL
            ${d.onlyWhenDue ? sql`AND w.due_at <= ${c.now()}` : sql``} RETURNING ${WAIT}`,
          undefined,
          client,
        );
        if (won.rowCount === 1) {
          const woke = await wakeRun(c, client, d.runId);
          await c.once(
            sql`INSERT INTO ${stepEvents} (run_id, outcome, count, detail, at)
            VALUES (${d.runId}, 'operator', 1, ${decideDetail(d)}, ${c.now()})`,
            undefined,
            client,
          );
          return { decided: true, woke, wait: won.rows[0]! };
        }
        return { decided: false, woke: false, wait: (await get(d.runId, d.kind, d.name, client))! };
      });
      if (decided.woke) announceWake(d.runId);
      return { decided: decided.decided, wait: decided.wait };
    },

    async waitDueInMs(runId, kind, name) {
      const due = await c.query<{ inS: number | null }>(
        sql`SELECT w.due_at - ${c.now()} AS "inS" FROM ${waits} w
          WHERE w.run_id = ${runId} AND w.kind = ${kind} AND w.name = ${name}`,
      );
      const inS = due.rows[0]?.inS;
      return inS == null ? null : Number(inS) * 1000;
    },

    async parkRun(runId, kind, name, workerId, attempt) {
      return withRetry('parkRun', () =>
        c.inTransaction(async (client) => {
          // Every named wait locked, in one order (a child's end locks one of them to decide it): one decided
          // meanwhile is seen, and one decided after waits for this park and then finds the run waiting.
          const names = typeof name === 'string' ? [name] : [...name].sort();
          const locked = (
            await c.once<{ decidedAt: number | null }>(
              sql`SELECT decided_at AS "decidedAt" FROM ${waits}
          WHERE run_id = ${runId} AND kind = ${kind} AND name = ANY(${sql.param(names)}::text[])
          ORDER BY name COLLATE "C" FOR UPDATE`,
              undefined,
              client,
            )
          ).rows;
          if (locked.some((wait) => wait.decidedAt != null)) return 'decided' as const;
          const parked = await c.once(
            sql`UPDATE ${runs} SET status = 'waiting', owner = NULL, lease_expires_at = NULL, updated_at = ${c.now()}
          WHERE ${and(eq(runs.id, runId), eq(runs.owner, workerId), eq(runs.attempts, attempt), eq(runs.status, 'running'))}`,
            undefined,
            client,
          );
          if (parked.rowCount !== 1) return 'lost' as const;
          if (kind === 'approval') {
            const [run] = await drizzle(client)
              .select({ workflow: runs.workflow })
              .from(runs)
              .where(eq(runs.id, runId));
            await enqueueIn(c, client, approvalEvent(runId, run!.workflow, names[0]!));
          }
          return 'parked' as const;
        }),
      );
    },

    async waitingSummary() {
      // The skew a number written in: the shared text is plain SQL.
      const now = dbNowText(String(Number(c.skew())));
      return (await c.query<WaitingKind>(sql.raw(WAITING_SUMMARY(now, 'COLLATE "C"')))).rows.map((row) => ({
        ...row,
        runs: Number(row.runs),
        oldestAt: Number(row.oldestAt),
        ageSeconds: Number(row.ageSeconds),
      }));
    },

    async nextWakeIn(request) {
      const next = await c.query<{ inS: number }>(
        sql`WITH t AS (SELECT ${c.now()} AS now)
        SELECT greatest(0, w.due_at - t.now) AS "inS" FROM ${waits} w CROSS JOIN t JOIN ${runs} r ON r.id = w.run_id
        WHERE w.decided_at IS NULL AND w.due_at > t.now - ${Math.max(0, request.sinceMs ?? 0) / 1000}::float8
          AND r.status = 'waiting'
          AND r.workflow = ANY(${sql.param(request.workflows)}::text[])
          AND (${request.runId ?? null}::text IS NULL OR r.id = ${request.runId ?? null}::text)
        ORDER BY w.due_at LIMIT 1`,
      );
      const row = next.rows[0];
      return row ? Number(row.inS) * 1000 : null;
    },

    onLocalWake,
  };
}
