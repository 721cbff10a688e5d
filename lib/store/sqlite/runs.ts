/**
 * Runs on SQLite: queueing, run leases, operator actions. A run lease is a column claimed by a conditional
 * UPDATE inside BEGIN IMMEDIATE, so two workers can never both take one run. The plain reads and writes go
 * through Drizzle's query builder; the pick of a runnable run and an operator's action stay hand-written
 * (json_each over the caller's lists, and a CASE per column whose reasons are in its comments).
 */
import { and, asc, count, desc, eq, inArray, isNull, sql } from 'drizzle-orm';
import type { RunLimits } from '../../domain/run-limits';
import { ConflictError, InvalidTransitionError, NotFoundError } from '../../errors';
import type { RunActed, RunRow, RunStore, WorkerStore, WorkflowStore } from '../contract';
import { runs } from '../schema/sqlite';
import { bornCancelledDetail, cascadeDetail, retriedWithParentDetail } from '../shared/children';
import { announceWake } from '../shared/local-wakes';
import { runHeadColumns, runHeadFilter } from '../shared/run-heads';
import { pickLimits, withinLimitsSql } from '../shared/run-limits-sql';
import { TRANSITIONS } from '../shared/transitions';
import { runEndEvent } from '../shared/webhooks';
import { guard, type SqliteConnection } from './connection';
import { sqliteLimitUse } from './limit-use';
import { listRunsIn } from './run-list';
import { writeRunTags } from './run-tags';
import type { InBatch } from './steps';
import { dueWait, reopenChildWait, settleChild } from './waits';
import { enqueueIn } from './webhooks';

type RunsOnly = Omit<RunStore, keyof WorkerStore | keyof WorkflowStore>;

/**
 * A run anyone may take now: queued, or running with a passed run lease (marking its worker stopped or dead passes
 * it: workers.ts), or waiting with its time come. Its first condition is runs_runnable's WHERE (schema/sqlite.ts)
 * as written there, which is how SQLite proves a partial index applies. It reads no other table but waits, by key.
 */
const RUNNABLE_NOW = `status IN ('queued', 'running', 'waiting')
    AND (status = 'queued' OR (status = 'running' AND lease_expires_at <= @now)
      -- A parked run whose sleep or timeout came (a decision queues its run itself: sqlite/waits.ts).
      OR (status = 'waiting' AND ${dueWait('runs.id', '@now')}))`;

/**
 * The pick, over runs_runnable: the runs that may be runnable, in the pick's order, never the finished ones.
 * Named, because SQLite's planner does not weigh the LIMIT: left to itself it reads the candidates through
 * runs_status_updated and sorts them all, hundreds of times the walk that stops at the first behind a long queue
 * (bench/RESULTS.md, "Why the code is shaped so"). INDEXED BY also turns a lost index into an error at prepare,
 * never a slow plan. Under limits, the places and starts they count are CTEs read once (shared/run-limits-sql.ts).
 */
export const runnable = (limits?: Record<string, RunLimits>): string => {
  const within = withinLimitsSql('sqlite', limits, 'runs', '@now');
  return `${within.with === '' ? '' : `WITH ${within.with}\n  `}SELECT id, owner FROM runs INDEXED BY runs_runnable
  WHERE ${RUNNABLE_NOW}
    AND workflow IN (SELECT value FROM json_each(@workflows))
    AND id NOT IN (SELECT value FROM json_each(@holding)) AND (@runId IS NULL OR id = @runId)
    ${within.condition === '' ? '' : `AND ${within.condition}`}
  ORDER BY priority DESC, created_at, id LIMIT 1`;
};

/** The pick of a worker whose workflows declare no limits. */
export const RUNNABLE = runnable();

/**
 * Whether any run is runnable now, for anyone, under the workflows' published limits (`limits`: pickLimits of
 * PUBLISHED_LIMITS): the wake watcher's look (notify.ts), a read that takes no lock. A run its limits hold back
 * wakes no one: behind a held queue every commit would otherwise send every idle worker into a pick under the
 * write lock, to find nothing. A place that frees is itself a commit, and the look after it finds the run.
 */
export const anyRunnable = (limits?: Record<string, RunLimits>): string => {
  const within = withinLimitsSql('sqlite', limits, 'runs', '@now');
  return `${within.with === '' ? '' : `WITH ${within.with}\n  `}SELECT EXISTS (SELECT 1 FROM runs INDEXED BY runs_runnable
    WHERE ${RUNNABLE_NOW}${within.condition === '' ? '' : ` AND ${within.condition}`}) AS any`;
};

/** The workflows' publications (@workflows: a JSON array of names, or null for all): what pickLimits reads. */
export const PUBLISHED_LIMITS = `SELECT name, limits_json AS limitsJson FROM workflows
  WHERE @workflows IS NULL OR name IN (SELECT value FROM json_each(@workflows))`;

const ACT = `UPDATE runs SET status = @to, updated_at = @now,
  error = CASE WHEN @to = 'queued' THEN NULL ELSE error END,
  finished_at = CASE WHEN @to = 'cancelled' THEN @now WHEN @to = 'queued' THEN NULL ELSE finished_at END,
  -- A retry (failed or cancelled to queued) is a fresh call to whatever a rate limit protects: its next pick is a
  -- start, counted and held as one (run-limits-sql.ts exempts a run that has started_at). A resume keeps it.
  started_at = CASE WHEN @to = 'queued' AND status IN ('failed', 'cancelled') THEN NULL ELSE started_at END,
  -- A paused running run keeps its owner until that worker notices and lets go (renewRunLease tells it):
  -- its last step may still complete it. A cancelled one is abandoned: nothing its worker does can finish
  -- it, the worker learns of it from the status alone, and a dead worker would otherwise own it forever.
  owner = CASE WHEN status = 'running' AND @to <> 'cancelled' THEN owner ELSE NULL END,
  lease_expires_at = CASE WHEN status = 'running' AND @to <> 'cancelled' THEN lease_expires_at ELSE NULL END,
  -- The parent whose cancel this is (cancelChildren's @cancelledWith), else null: an operator's own cancel clears
  -- it, so the newest cancel decides whether the parent's retry brings the run back (retryChildren reads it, never
  -- the events' words, whose actor is free text), and so does every move out of cancelled.
  cancelled_with = @cancelledWith
  WHERE id = @id`;

/** `inBatch`: group commit's queue (steps-batch.ts), which the run lease renewals join; null when it is off. */
export function sqliteRuns(c: SqliteConnection, inBatch: InBatch | null = null): RunsOnly {
  const { orm } = c;
  const get = (id: string): RunRow | undefined => orm.select().from(runs).where(eq(runs.id, id)).get();
  /**
   * Which execution of a run a call speaks for: the run's `attempts` when claimRun handed it out. A worker id
   * alone does not tell a stalled execution from its successor under the same id. Undefined: the caller's
   * worker id is the whole test.
   */
  const owned = (id: string, workerId: string, attempt: number | undefined) =>
    and(eq(runs.id, id), eq(runs.owner, workerId), attempt === undefined ? undefined : eq(runs.attempts, attempt));

  /**
   * A cancelled run's children go with it, and theirs, unless started detached; each gets its own operator event.
   * Their parents are cancelled, so the waits they decide wake nobody.
   */
  const cancelChildren = (parentId: string, actor: string, now: number): void => {
    const open = orm
      .select()
      .from(runs)
      .where(
        and(eq(runs.parentRunId, parentId), eq(runs.detached, false), inArray(runs.status, TRANSITIONS.cancel.from)),
      )
      .all();
    for (const child of open) {
      c.prepared(ACT).run({ id: child.id, to: 'cancelled', now, cancelledWith: parentId });
      c.event({ runId: child.id, outcome: 'operator', detail: cascadeDetail(actor, parentId, child.status) }, now);
      settleChild(c, get(child.id)!, now);
      cancelChildren(child.id, actor, now);
    }
  };

  /**
   * A retried run brings back its attached children its cancel had cancelled (cancelled_with names it: its
   * cascade, or their start after it), and theirs; each gets its own operator event, and the parent's wait for it
   * is open again (reopenChildWait). A child cancelled on its own, or ended otherwise, stays as it is. The runs
   * retried, a parent before its children.
   */
  const retryChildren = (parentId: string, actor: string, now: number): { runId: string; parentId: string }[] => {
    const cancelled = orm
      .select()
      .from(runs)
      .where(
        and(
          eq(runs.parentRunId, parentId),
          eq(runs.detached, false),
          eq(runs.status, 'cancelled'),
          eq(runs.cancelledWith, parentId),
        ),
      )
      .orderBy(asc(runs.createdAt), asc(runs.id))
      .all();
    const retried: { runId: string; parentId: string }[] = [];
    for (const child of cancelled) {
      c.prepared(ACT).run({ id: child.id, to: TRANSITIONS.retry.to, now, cancelledWith: null });
      c.event({ runId: child.id, outcome: 'operator', detail: retriedWithParentDetail(actor, parentId) }, now);
      reopenChildWait(c, get(parentId)!, child.id, now);
      retried.push({ runId: child.id, parentId }, ...retryChildren(child.id, actor, now));
    }
    return retried;
  };

  return {
    async createRun(run) {
      const now = c.now();
      return c.tx(() => {
        const { tags, metadata, ...row } = run;
        // An attached child of a cancelled parent goes with it, as cancelChildren would have taken it.
        const orphaned =
          run.parentRunId != null && run.detached !== true && get(run.parentRunId)?.status === 'cancelled';
        const inserted = orm
          .insert(runs)
          .values({
            ...row,
            status: orphaned ? 'cancelled' : 'queued',
            createdAt: now,
            updatedAt: now,
            ...(orphaned ? { finishedAt: now, cancelledWith: run.parentRunId } : {}),
          })
          .onConflictDoNothing()
          .run();
        if (inserted.changes === 0) throw new ConflictError(`run ${run.id}`);
        if (orphaned)
          c.event({ runId: run.id, outcome: 'operator', detail: bornCancelledDetail(run.parentRunId!) }, now);
        writeRunTags(c, run.id, tags ?? [], metadata ?? {});
        return get(run.id)!;
      });
    },

    async getRun(id) {
      return guard(() => get(id) ?? null);
    },

    async keepTraceparent(id, traceparent) {
      c.tx(() => {
        orm
          .update(runs)
          .set({ traceparent })
          .where(and(eq(runs.id, id), isNull(runs.traceparent)))
          .run();
      });
    },

    async childrenOf(parentId, first) {
      return guard(() => {
        const counts = orm
          .select({ status: runs.status, n: count() })
          .from(runs)
          .where(eq(runs.parentRunId, parentId))
          .groupBy(runs.status)
          .all();
        const newest = orm
          .select({ id: runs.id, workflow: runs.workflow, status: runs.status, detached: runs.detached })
          .from(runs)
          .where(eq(runs.parentRunId, parentId))
          .orderBy(desc(runs.updatedAt), runs.id)
          .limit(first)
          .all();
        return { byStatus: Object.fromEntries(counts.map((c) => [c.status, c.n])), first: newest };
      });
    },

    async setRunBudget(id, budgetUsd, options) {
      const now = c.now();
      return c.tx(() => {
        const where = options?.ifUnset ? and(eq(runs.id, id), isNull(runs.budgetUsd)) : eq(runs.id, id);
        orm.update(runs).set({ budgetUsd, updatedAt: now }).where(where).run();
        const run = get(id);
        if (!run) throw new NotFoundError(`run ${id}`);
        return run;
      });
    },

    async listRuns(filter) {
      return guard(() => listRunsIn(c, filter));
    },

    async listRunHeads(filter) {
      if (filter.workflows?.length === 0) return [];
      return guard(() =>
        orm
          .select(runHeadColumns(runs))
          .from(runs)
          .where(runHeadFilter(runs, filter))
          .orderBy(desc(runs.updatedAt))
          .limit(filter.limit)
          .all(),
      );
    },

    async claimRun(request) {
      return c.tx(() => {
        // Read once the write lock is ours, not before BEGIN IMMEDIATE waited for it: a run's start time is when it
        // was taken, which a rate limit's window counts. No other writer can start a run between the counts and the take.
        const now = c.now();
        const workflows = JSON.stringify(request.workflows);
        const published = c
          .prepared<unknown[], { name: string; limitsJson: string | null }>(PUBLISHED_LIMITS)
          .all({ workflows });
        const limits = pickLimits(request.workflows, published, request.limits);
        const found = c.prepared<unknown[], { id: string; owner: string | null }>(runnable(limits)).get({
          now,
          workflows,
          holding: JSON.stringify(request.holding ?? []),
          runId: request.runId ?? null,
        });
        if (!found) return null;
        orm
          .update(runs)
          .set({
            status: 'running',
            owner: request.workerId,
            leaseExpiresAt: now + request.leaseMs / 1000,
            attempts: sql`${runs.attempts} + 1`,
            startedAt: sql`coalesce(${runs.startedAt}, ${now})`,
            updatedAt: now,
          })
          .where(eq(runs.id, found.id))
          .run();
        if (found.owner && found.owner !== request.workerId) {
          c.event(
            {
              runId: found.id,
              outcome: 'expired',
              workerId: request.workerId,
              detail: `run lease of ${found.owner} passed or its worker died; resumed by ${request.workerId}`,
            },
            now,
          );
        }
        return get(found.id)!;
      });
    },

    ...sqliteLimitUse(c),

    async renewRunLease(id, workerId, leaseMs, attempt) {
      const renew = (now: number) => {
        const renewed = orm
          .update(runs)
          .set({ leaseExpiresAt: now + leaseMs / 1000 })
          .where(and(owned(id, workerId, attempt), eq(runs.status, 'running')))
          .run();
        if (renewed.changes === 1) return { held: true, status: 'running' as const };
        return { held: false, status: get(id)?.status ?? null };
      };
      return inBatch ? inBatch(renew) : guard(() => renew(c.now()));
    },

    async finishRun(id, workerId, outcome, attempt) {
      const now = c.now();
      let woke: string | null = null;
      const finished = c.tx(() => {
        const ended =
          orm
            .update(runs)
            .set({
              status: outcome.status,
              error: outcome.error ?? null,
              outputJson: outcome.outputJson ?? null,
              owner: null,
              leaseExpiresAt: null,
              finishedAt: now,
              updatedAt: now,
            })
            .where(and(owned(id, workerId, attempt), inArray(runs.status, ['running', 'paused'])))
            .run().changes === 1;
        if (!ended) return false;
        const run = get(id)!;
        woke = settleChild(c, run, now);
        // The alert webhooks' run.failed / run.completed, committed with the end they tell of.
        const event = runEndEvent(run);
        if (event) enqueueIn(c, event, now);
        return true;
      });
      if (woke) announceWake(woke);
      return finished;
    },

    async releaseRun(id, workerId, attempt) {
      const now = c.now();
      guard(() =>
        orm
          .update(runs)
          .set({
            status: sql`CASE ${runs.status} WHEN 'running' THEN 'queued' ELSE ${runs.status} END`,
            owner: null,
            leaseExpiresAt: null,
            updatedAt: now,
          })
          .where(owned(id, workerId, attempt))
          .run(),
      );
    },

    async actOnRun(id, action, actor, alert) {
      const now = c.now();
      let woke: string | null = null;
      const acted = c.tx((): RunActed => {
        const run = get(id);
        if (!run) throw new NotFoundError(`run ${id}`);
        const { from, to } = TRANSITIONS[action];
        if (!from.includes(run.status)) throw new InvalidTransitionError(id, action, run.status);
        c.prepared(ACT).run({ id, to, now, cancelledWith: null });
        c.event({ runId: id, outcome: 'operator', detail: `${action} by ${actor}: ${run.status} → ${to}` }, now);
        if (alert) enqueueIn(c, alert, now);
        if (to === 'cancelled') {
          woke = settleChild(c, get(id)!, now);
          cancelChildren(id, actor, now);
        }
        if (action === 'retry') return { ...get(id)!, retriedChildren: retryChildren(id, actor, now) };
        return get(id)!;
      });
      if (woke) announceWake(woke);
      return acted;
    },
  };
}
