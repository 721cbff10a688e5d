/**
 * Durable waits on SQLite (contract/waits.ts). Every write is one BEGIN IMMEDIATE transaction, so a decision and
 * a park are serialized by the write lock: a park sees a decision committed before it, and a decision made
 * after a park finds the run `waiting` and flips it to `queued` in the same transaction.
 *
 * A parked run becomes runnable in exactly two ways, each written once here: a decision queues it (wakeRun),
 * or its wait's time comes (dueWait, which the claim's pick reads, and nextWakeIn, which idle workers sleep
 * until).
 */
import { and, asc, count, eq, isNull, lte } from 'drizzle-orm';
import { NotFoundError } from '../../errors';
import type { RunRow, WaitDecision, WaitingKind, WaitKind, WaitRow, WaitStore } from '../contract';
import { runs, waits } from '../schema/sqlite';
import { CHILD_DECIDER, type ChildOutcome, childDecisionJson, childDetail, reopenedDetail } from '../shared/children';
import { announceWake, onLocalWake } from '../shared/local-wakes';
import { CHILD_READER, FORK_LINEAGE, keptDetail, nextEndPrefix, readDetail, replacedDetail } from '../shared/rewind';
import { decisionDetail, refuseOverLimit, WAITING_SUMMARY } from '../shared/waits';
import { approvalEvent } from '../shared/webhooks';
import { committedRun } from './committed-rows';
import { guard, type SqliteConnection } from './connection';
import { enqueueIn } from './webhooks';

/**
 * The claim's "a parked run whose time came": the run `run` (an SQL expression) has an open wait due by `now`
 * (a parameter). sqlite/runs.ts's pick embeds it; nextWakeIn looks for the first not yet due.
 */
export const dueWait = (run: string, now: string) =>
  `EXISTS (SELECT 1 FROM waits dw WHERE dw.run_id = ${run} AND dw.decided_at IS NULL AND dw.due_at <= ${now})`;

/**
 * The first open wait still ahead (or come due since the caller's last claim), of a waiting run this worker may
 * take. Walks waits_open_due from then on (forced: the planner would otherwise start from the runs), so a
 * cancelled run's forgotten timeout, long past, is never read again.
 */
const NEXT_WAKE = `SELECT max(0, w.due_at - @now) AS inS FROM waits w INDEXED BY waits_open_due JOIN runs r ON r.id = w.run_id
  WHERE w.decided_at IS NULL AND w.due_at > @now - @since AND r.status = 'waiting'
    AND r.workflow IN (SELECT value FROM json_each(@workflows)) AND (@runId IS NULL OR r.id = @runId)
  ORDER BY w.due_at LIMIT 1`;

/**
 * A decision made the run runnable: a parked (`waiting`) run goes back to `queued`, inside the decision's
 * transaction. The one place a decision wakes a run: a store-level wake for other processes is added here.
 * False when the run was not parked (a signal sent ahead, a paused run): nothing to wake.
 */
function wakeRun(c: SqliteConnection, runId: string, now: number): boolean {
  return (
    c.orm
      .update(runs)
      .set({ status: 'queued', updatedAt: now })
      .where(and(eq(runs.id, runId), eq(runs.status, 'waiting')))
      .run().changes === 1
  );
}

/**
 * A child run ended (finishRun, a cancel): its parent's `child` wait named for it is decided with how, created
 * decided if the parent has not reached it yet, and a parent that reached it woken, in the caller's transaction.
 * So are the copies of that wait its parent's forks hold (settleForks). An end after the first (an operator
 * retried the child) goes to settleAgain. The parent's id when it woke or was queued anew (announce it after the
 * commit), else null.
 */
export function settleChild(c: SqliteConnection, child: RunRow, now: number): string | null {
  const parent = child.parentRunId;
  if (parent === null) return null;
  settleForks(c, child, parent, now);
  // A row made here is one the parent has not reached: it will find it decided, and is not woken for it (it may
  // be parked on another child, or waiting for a person).
  const ahead =
    c.orm
      .insert(waits)
      .values({ runId: parent, name: child.id, kind: 'child', createdAt: now })
      .onConflictDoNothing()
      .run().changes === 1;
  const won = c.orm
    .update(waits)
    .set({ decidedAt: now, decisionJson: childDecisionJson(child), decidedBy: CHILD_DECIDER })
    .where(and(eq(waits.runId, parent), eq(waits.kind, 'child'), eq(waits.name, child.id), isNull(waits.decidedAt)))
    .run();
  if (won.changes === 0) return settleAgain(c, child, parent, now);
  c.event({ runId: parent, outcome: 'operator', detail: childDetail(child) }, now);
  return !ahead && wakeRun(c, parent, now) ? parent : null;
}

/**
 * The open waits for the child that forks of its parent copied (shared/rewind.ts forkPlan: a fork from after the
 * child's start keeps the child, and waits for it as its original does), decided as the parent's is; each fork
 * parked on one is woken. Forks of forks too: a fork copies its original's waits.
 */
function settleForks(c: SqliteConnection, child: RunRow, parent: string, now: number): void {
  const decided = c
    .prepared<unknown[], { runId: string }>(
      `UPDATE waits SET decided_at = ?, decision_json = ?, decided_by = ?
      WHERE kind = 'child' AND name = ? AND decided_at IS NULL AND run_id IN (${FORK_LINEAGE})
      RETURNING run_id AS runId`,
    )
    .all(now, childDecisionJson(child), CHILD_DECIDER, child.id, parent);
  // A fork woken here is found by the next look of a worker: the caller announces one run, its parent.
  for (const { runId } of decided) {
    c.event({ runId, outcome: 'operator', detail: childDetail(child) }, now);
    wakeRun(c, runId, now);
  }
}

/**
 * The child ended again, its parent's wait decided by an earlier end. An end that completed is the answer for
 * good. One that did not (failed, cancelled, rejected) is replaced by this one unless the parent has acted on it:
 * completed or rejected since, holds a claim (a step in hand), or since it first read it committed a step or reached
 * a wait of another kind (a person asked, a signal or an event awaited, in the light of that end). The
 * engine records that read before acting (lib/engine/children.ts: the wait for the child's next end,
 * `<child>#<n>`, made when it reads such an end), so a step the parent committed after the child's end but
 * before it looked does not count. A parent that never read it has acted on nothing. The parent's open waits for
 * the next end are decided with this one, and a parent parked on one woken.
 *
 * A running parent (or a paused one whose worker still holds it) may have read the old answer this instant and
 * be about to act on it, or to park for the next end on a wait this transaction cannot see yet (on PostgreSQL):
 * its execution is fenced off (queued anew, or its owner dropped) and the run replays, reading the wait as it is
 * now. Nothing it acted on is lost: a step in hand keeps its claim, which keeps the old answer.
 */
function settleAgain(c: SqliteConnection, child: RunRow, parent: string, now: number): string | null {
  const wait = c.orm
    .select()
    .from(waits)
    .where(and(eq(waits.runId, parent), eq(waits.kind, 'child'), eq(waits.name, child.id)))
    .get();
  if (!wait?.decisionJson) return null;
  const was = JSON.parse(wait.decisionJson) as ChildOutcome;
  if (was.status === 'completed') return null;
  const run = c.orm.select().from(runs).where(eq(runs.id, parent)).get();
  if (!run) return null;
  let queued = false;
  if (actedOn(c, run, child.id, wait.decidedAt!)) {
    c.event({ runId: parent, outcome: 'operator', detail: keptDetail(child, was) }, now);
  } else {
    c.orm
      .update(waits)
      .set({ decidedAt: now, decisionJson: childDecisionJson(child), decidedBy: CHILD_DECIDER })
      .where(and(eq(waits.runId, parent), eq(waits.kind, 'child'), eq(waits.name, child.id)))
      .run();
    c.event({ runId: parent, outcome: 'operator', detail: replacedDetail(child, was) }, now);
    if (run.status === 'paused' && run.owner !== null)
      c.orm
        .update(runs)
        .set({ owner: null, leaseExpiresAt: null, updatedAt: now })
        .where(and(eq(runs.id, parent), eq(runs.status, 'paused')))
        .run();
  }
  if (run.status === 'running')
    queued =
      c.orm
        .update(runs)
        .set({ status: 'queued', owner: null, leaseExpiresAt: null, updatedAt: now })
        .where(and(eq(runs.id, parent), eq(runs.status, 'running')))
        .run().changes === 1;
  const next = c
    .prepared(
      `UPDATE waits SET decided_at = ?, decision_json = ?, decided_by = ?
      WHERE run_id = ? AND kind = 'child' AND decided_at IS NULL AND substr(name, 1, ?) = ?`,
    )
    .run(now, childDecisionJson(child), CHILD_DECIDER, parent, child.id.length + 1, nextEndPrefix(child.id));
  const woke = next.changes > 0 && wakeRun(c, parent, now);
  return queued || woke ? parent : null;
}

/** Whether the parent has acted on the end its wait for `childId` holds, decided at `decidedAt` (settleAgain). */
function actedOn(c: SqliteConnection, run: RunRow, childId: string, decidedAt: number): boolean {
  if (run.status === 'completed' || run.status === 'rejected') return true;
  if (c.prepared('SELECT 1 FROM claims WHERE run_id = ? LIMIT 1').get(run.id)) return true;
  const read = c
    .prepared<unknown[], { at: number | null }>(
      `SELECT min(created_at) AS at FROM waits
      WHERE run_id = ? AND kind = 'child' AND substr(name, 1, ?) = ? AND created_at >= ?`,
    )
    .get(run.id, childId.length + 1, nextEndPrefix(childId), decidedAt)?.at;
  if (read == null) return false;
  if (
    c.prepared(`SELECT 1 FROM waits WHERE run_id = ? AND kind <> 'child' AND created_at >= ? LIMIT 1`).get(run.id, read)
  )
    return true;
  return (
    c
      .prepared(`SELECT 1 FROM committed WHERE ${committedRun('= @run')} AND committed_at >= @read LIMIT 1`)
      .get({ run: run.id, read }) !== undefined
  );
}

/**
 * A retry of the parent brought back a child its cancel had cancelled (sqlite/runs.ts retryChildren): the parent's
 * wait for that child, decided with the cancel, is open again, so the parent waits for the child's new end, which
 * settleChild decides as any first end. Left decided (and to settleAgain, when the child ends again) if the parent
 * has acted on the cancel: a parent retried before this rule existed may have. A parent that had not reached the
 * wait yet is woken by the child's end all the same, and parks again on what it waits for: one replay. True when
 * reopened.
 */
export function reopenChildWait(c: SqliteConnection, parent: RunRow, childId: string, now: number): boolean {
  const wait = c.orm
    .select()
    .from(waits)
    .where(and(eq(waits.runId, parent.id), eq(waits.kind, 'child'), eq(waits.name, childId)))
    .get();
  if (!wait?.decisionJson || wait.decidedBy !== CHILD_DECIDER) return false;
  if ((JSON.parse(wait.decisionJson) as ChildOutcome).status !== 'cancelled') return false;
  if (actedOn(c, parent, childId, wait.decidedAt!)) return false;
  c.orm
    .update(waits)
    .set({ decidedAt: null, decisionJson: null, decidedBy: null, note: null })
    .where(and(eq(waits.runId, parent.id), eq(waits.kind, 'child'), eq(waits.name, childId)))
    .run();
  c.event({ runId: parent.id, outcome: 'operator', detail: reopenedDetail(childId) }, now);
  return true;
}

/** The timeline's line for a decision: a parent's read of its child's end (the engine's children.ts) says so. */
const decideDetail = (d: WaitDecision): string =>
  d.kind === 'child' && d.decidedBy === CHILD_READER
    ? readDetail(d.name, d.decisionJson)
    : decisionDetail(d.kind, d.name, d.decisionJson, d.decidedBy, d.note);

export function sqliteWaits(c: SqliteConnection): WaitStore {
  const { orm } = c;
  const get = (runId: string, kind: WaitKind, name: string): WaitRow | undefined =>
    orm
      .select()
      .from(waits)
      .where(and(eq(waits.runId, runId), eq(waits.kind, kind), eq(waits.name, name)))
      .get();

  const countWaits = (runId: string): number =>
    orm.select({ n: count() }).from(waits).where(eq(waits.runId, runId)).get()!.n;

  return {
    async getWait(runId, kind, name) {
      return guard(() => get(runId, kind, name) ?? null);
    },

    async openEventWaits(name, recordedBy) {
      return guard(() =>
        orm
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
          .orderBy(asc(waits.createdAt), asc(waits.runId))
          .all(),
      );
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
        return get(wait.runId, wait.kind, wait.name)!;
      });
    },

    async decideWait(d) {
      const now = c.now();
      const decided = c.tx(() => {
        const run = orm.select({ status: runs.status }).from(runs).where(eq(runs.id, d.runId)).get();
        if (!run) throw new NotFoundError(`run ${d.runId}`);
        let wait = get(d.runId, d.kind, d.name);
        if (!wait && d.createIfAbsent) {
          if (d.maxWaits !== undefined) refuseOverLimit(d.runId, d.name, countWaits(d.runId), d.maxWaits);
          orm.insert(waits).values({ runId: d.runId, name: d.name, kind: d.kind, createdAt: now }).run();
          wait = get(d.runId, d.kind, d.name)!;
        }
        if (!wait) throw new NotFoundError(`${d.kind} ${d.name} of run ${d.runId}`);
        const won =
          orm
            .update(waits)
            .set({ decidedAt: now, decisionJson: d.decisionJson, decidedBy: d.decidedBy, note: d.note ?? null })
            .where(
              and(
                eq(waits.runId, d.runId),
                eq(waits.kind, d.kind),
                eq(waits.name, d.name),
                isNull(waits.decidedAt),
                d.onlyWhenDue ? lte(waits.dueAt, now) : undefined,
              ),
            )
            .run().changes === 1;
        let woke = false;
        if (won) {
          woke = wakeRun(c, d.runId, now);
          c.event(
            {
              runId: d.runId,
              outcome: 'operator',
              detail: decideDetail(d),
            },
            now,
          );
        }
        return { decided: won, woke, wait: get(d.runId, d.kind, d.name)! };
      });
      if (decided.woke) announceWake(d.runId);
      return { decided: decided.decided, wait: decided.wait };
    },

    async waitDueInMs(runId, kind, name) {
      const now = c.now();
      return guard(() => {
        const dueAt = get(runId, kind, name)?.dueAt;
        return dueAt == null ? null : (dueAt - now) * 1000;
      });
    },

    async parkRun(runId, kind, name, workerId, attempt) {
      const now = c.now();
      return c.tx(() => {
        const names = typeof name === 'string' ? [name] : name;
        if (names.some((one) => get(runId, kind, one)?.decidedAt != null)) return 'decided' as const;
        const parked = orm
          .update(runs)
          .set({ status: 'waiting', owner: null, leaseExpiresAt: null, updatedAt: now })
          .where(
            and(eq(runs.id, runId), eq(runs.owner, workerId), eq(runs.attempts, attempt), eq(runs.status, 'running')),
          )
          .run();
        if (parked.changes !== 1) return 'lost' as const;
        if (kind === 'approval') {
          const run = orm.select({ workflow: runs.workflow }).from(runs).where(eq(runs.id, runId)).get()!;
          enqueueIn(c, approvalEvent(runId, run.workflow, names[0]!), now);
        }
        return 'parked' as const;
      });
    },

    async waitingSummary() {
      return guard(() =>
        c.prepared<{ now: number }, WaitingKind>(WAITING_SUMMARY('@now', 'COLLATE BINARY')).all({ now: c.now() }),
      );
    },

    async nextWakeIn(request) {
      return guard(() => {
        const next = c.prepared<unknown[], { inS: number }>(NEXT_WAKE).get({
          now: c.now(),
          since: Math.max(0, request.sinceMs ?? 0) / 1000,
          workflows: JSON.stringify(request.workflows),
          runId: request.runId ?? null,
        });
        return next ? next.inS * 1000 : null;
      });
    },

    onLocalWake,
  };
}
