/**
 * Runs on PostgreSQL: queueing, run leases, operator actions, with sqlite/runs.ts's semantics. A worker takes
 * a run with FOR UPDATE SKIP LOCKED in one statement, so workers on many hosts never block each other or take
 * the same run, and every lease is judged by the database clock. The plain reads go through Drizzle's query
 * builder; the statements whose semantics need one round trip are Drizzle `sql` templates, each value at its
 * place. Isolation is READ COMMITTED; a comment says why no concurrent statement can slip in where one
 * decision reads one row and writes another. Event details are sqlite/runs.ts's, word for word.
 *
 * Transient failures are retried. Most statements are safe to run twice (a renewal, an upsert, an update
 * fenced by owner). Four would answer wrongly after a lost connection whose statement had in fact
 * committed, so after such a loss they first recognise their own earlier attempt:
 *
 * - createRun: the id is taken by a row with this call's workflow, input and total, created since the
 *   call began: that is our run, not a conflict. (An identical run queued by someone else in that second
 *   cannot be told apart, and needs no telling: the run asked for is queued once.)
 * - claimRun: a running run owned by this worker that this store never handed to it is the one the lost
 *   attempt took: it is handed over now, instead of waiting out its lease while we take another. Runs
 *   the worker is executing are excluded by id, so one is never handed out twice.
 * - finishRun: the run already ended the way we asked since the call began: true, not "taken over".
 * - actOnRun: the run's latest operator event is this action by this actor, since the call began: done,
 *   not InvalidTransition, and not done twice.
 */
import { performance } from 'node:perf_hooks';
import { and, desc, eq, isNull, type SQL, sql } from 'drizzle-orm';
import type pg from 'pg';
import { limitsHold, type RunLimits } from '../../domain/run-limits';
import { ConflictError, InvalidTransitionError, NotFoundError } from '../../errors';
import type { RunRow, RunStatus, RunStore, WorkerStore, WorkflowStore } from '../contract';
import { runs, stepEvents, workflows } from '../schema/pg';
import { bornCancelledDetail, cascadeDetail, retriedWithParentDetail } from '../shared/children';
import { announceWake } from '../shared/local-wakes';
import { runHeadColumns, runHeadFilter } from '../shared/run-heads';
import { limitsMayHoldSql, pickLimits, withinLimitsSql } from '../shared/run-limits-sql';
import { TRANSITIONS } from '../shared/transitions';
import { runEndEvent } from '../shared/webhooks';
import { RUN_ALIASES, RUN as RUN_LIST } from './columns';
import type { PgConnection } from './connection';
import { postgresLimitUse } from './limit-use';
import { mayHaveRun, withRetry } from './retry';
import { listRuns } from './run-list';
import { dueWait, reopenChildWait, settleChild } from './waits';
import { enqueueIn } from './webhooks';

type RunsOnly = Omit<RunStore, keyof WorkerStore | keyof WorkflowStore>;

/** The plain pick's row: the run taken, or every column null when none was (claimStatement). */
type Nullable<T> = { [K in keyof T]: T[K] | null };
/** The workflows' publications, as pickLimits reads them. */
type Published = { name: string; limitsJson: string | null }[];

/**
 * Added to "since the call began" when recognising an earlier attempt: the database's now() for the retry
 * is taken a network hop after we measure. A generous second; the other conditions do the telling apart.
 */
const SLACK_S = 1;

interface Attempt {
  /** An earlier attempt's connection died: its statement may have committed. */
  outcomeUnknown: boolean;
  /** Seconds since the call began, slack included. */
  sinceS: number;
}

/** A runs row as RunRow, from the table aliased `r` (ambiguous names otherwise, in UPDATE … FROM). */
const RUN = sql.raw(RUN_LIST);

/**
 * Which execution a call speaks for: the run's `attempts` when claimRun handed it out (undefined: the worker
 * id alone). A worker id cannot tell a stalled execution from its successor under the same id.
 */
const fence = (attempt: number | undefined): SQL =>
  sql`(${attempt ?? null}::int IS NULL OR ${runs.attempts} = ${attempt ?? null}::int)`;

/**
 * Which runs `p` the pick may take (claimStatement's comment says why each condition is written so), and the
 * order and lock it takes them in: one text for the plain pick and the pick under limits.
 */
function pickable(request: { workflows: string[]; runId?: string }, holding: string[], now: SQL): SQL {
  return sql`p.workflow = ANY(${sql.param(request.workflows)}::text[]) AND p.id <> ALL(${sql.param(holding)}::text[])
      ${request.runId === undefined ? sql`` : sql`AND p.id = ${request.runId}::text`}
      AND (p.status = 'queued' OR (p.status = 'running' AND p.lease_expires_at <= ${now})
        -- A parked run whose sleep or timeout came (a decision queues its run itself: postgres/waits.ts).
        OR (p.status = 'waiting' AND ${dueWait(sql.raw('p.id'), now)}))`;
}

const PICK_ORDER = sql`ORDER BY p.priority DESC NULLS LAST, p.created_at, p.id COLLATE "C" LIMIT 1
    FOR UPDATE OF p SKIP LOCKED`;

/**
 * The run pick, one statement: takes one runnable run — queued, or running with a passed run lease (marking its
 * worker stopped or dead passes it: workers.ts), or waiting with its time come — never one of the runs the caller
 * has in hand, and only `runId` when given. Exported for the plan test (test/postgres/pick-plan.test.ts), which
 * EXPLAINs exactly this.
 *
 * - pick: the oldest runnable run, locked. SKIP LOCKED passes over a row another claimer has locked, so
 *         claimers on any number of hosts never wait for each other nor take the same run; LIMIT 1 stops
 *         at the first row it could lock. Under READ COMMITTED, a row changed since the snapshot is
 *         re-read at its newest version and the WHERE re-checked on it: a run another worker took and
 *         committed meanwhile no longer qualifies, and the next one is tried (never a spurious "none").
 *         MATERIALIZED: the pick runs once, whatever the plan.
 *         Its WHERE implies runs_runnable's (schema/pg.ts), so the plan walks that partial index in the pick's
 *         order and stops at the first it can lock: the runs that may be runnable, never the finished ones however
 *         many there are, and no other table but waits (by key). That walk wins only while the planner expects
 *         many rows to qualify (LIMIT 1 then stops early); a condition it misjudges as rare makes it sort every
 *         live run instead (bench/RESULTS.md, "Why the code is shaped so"). So the index's own
 *         `status IN (…)` is not repeated (the two would be multiplied as if independent), and `runId` is a
 *         condition only when given, never `$n IS NULL OR …`, whose generic plan guesses rare.
 * - taken: the run becomes ours; pick.owner (the newest version's) is who we took it from.
 * - the `expired` event, when that was another worker.
 * - limited: the publications of the workflows asked for, and whether one may declare a limit (limitsMayHoldSql).
 *         Then the pick takes nothing (a one-time filter: the plan is the same walk) and answers them, and the
 *         caller takes the path under limits (claimWithinLimits) with them: a pick of workflows without limits
 *         stays one round trip. Left out when `underLimits` (that path's own take, of the run it decided on).
 *
 * Answers one row: the run taken (its columns null when none) and `published` (null unless a limit may hold);
 * under limits, the run taken alone, or no row.
 */
export function claimStatement(
  c: PgConnection,
  request: { workerId: string; leaseMs: number; workflows: string[]; holding?: string[]; runId?: string },
  { now = c.now(), underLimits = false }: { now?: SQL; underLimits?: boolean } = {},
): SQL {
  const holding = request.holding ?? [];
  const lease = request.leaseMs / 1000;
  const worker = sql`${request.workerId}::text`;
  const limited = underLimits
    ? sql``
    : sql`limited AS MATERIALIZED (SELECT coalesce(bool_or(${sql.raw(limitsMayHoldSql('w'))}), false) AS yes,
        json_agg(json_build_object('name', w.name, 'limitsJson', w.limits_json)) AS published
      FROM ${workflows} w WHERE w.name = ANY(${sql.param(request.workflows)}::text[])),
  `;
  return sql`WITH ${limited}pick AS MATERIALIZED (
    SELECT p.id, p.owner FROM ${runs} p WHERE ${underLimits ? sql`` : sql`NOT (SELECT yes FROM limited) AND `}${pickable(request, holding, now)} ${PICK_ORDER}),
  taken AS (UPDATE ${runs} r SET status = 'running', owner = ${worker}, lease_expires_at = t.now + ${lease}::float8,
      attempts = r.attempts + 1, started_at = coalesce(r.started_at, t.now), updated_at = t.now
    FROM pick, (SELECT ${now} AS now) t WHERE r.id = pick.id
    RETURNING ${RUN}, pick.owner AS "previousOwner"),
  expired AS (INSERT INTO ${stepEvents} (run_id, outcome, count, worker_id, detail, at)
    SELECT taken.id, 'expired', 1, ${worker},
      'run lease of ' || taken."previousOwner" || ' passed or its worker died; resumed by ' || ${worker}, taken."updatedAt"
    FROM taken WHERE taken."previousOwner" <> ${worker})
  ${
    underLimits
      ? sql`SELECT ${sql.raw(RUN_ALIASES)} FROM taken`
      : sql`SELECT ${sql.raw(RUN_ALIASES)}, CASE WHEN limited.yes THEN limited.published END AS "published"
        FROM limited LEFT JOIN taken ON true`
  }`;
}

/** The time of a statement under limits, read once however often its CTEs use it (withNow defines it). */
const LIMIT_NOW = '(SELECT now FROM limit_now)';

const withNow = (at: SQL, within: { with: string }): SQL =>
  sql`WITH limit_now AS (SELECT ${at} AS now)${within.with === '' ? sql`` : sql.raw(`,\n  ${within.with}`)}`;

/**
 * The pick's candidate under `limits` (pickLimits'), the runs in `excluded` left out: found as the plain pick
 * finds one, on the statement's snapshot, and locked. Exported for the plan test
 * (test/contract/limits-plan.test.ts), which EXPLAINs exactly this.
 */
export function candidateStatement(
  c: PgConnection,
  request: { workflows: string[]; holding?: string[]; runId?: string },
  limits: Record<string, RunLimits>,
  excluded: string[] = [],
): SQL {
  const within = withinLimitsSql('postgres', limits, 'p', LIMIT_NOW);
  return sql`${withNow(c.now(), within)}
    SELECT p.id, p.workflow FROM ${runs} p, limit_now t
    WHERE ${pickable(request, [...(request.holding ?? []), ...excluded], sql.raw('t.now'))}
      ${within.condition === '' ? sql`` : sql.raw(`AND ${within.condition}`)} ${PICK_ORDER}`;
}

/**
 * The pick under limits (lib/domain/run-limits), by the limits pickLimits chooses (the workflows' publications,
 * read once per pick): the candidate is found as the plain pick finds one, with its workflow's limits judged on
 * the statement's snapshot; then, holding a transaction lock on the workflow's limits, they are judged again by a
 * statement of its own, whose snapshot has every take committed before the lock was ours. Two workers picking
 * runs of one limited workflow so decide one after the other, and never both take the last place. One lock per
 * transaction, so no two pickers wait on each other in a cycle; a candidate the second look refuses (a race
 * lost) is left out of the next transaction's pick, up to three. Each statement's time is its CTE `limit_now`,
 * read once (shared/run-limits-sql.ts counts places and starts in CTEs that read it).
 */
async function claimWithinLimits(
  c: PgConnection,
  request: Parameters<RunStore['claimRun']>[0],
  known?: Published,
): Promise<RunRow | undefined> {
  const published =
    known ??
    (
      await c.query<Published[number]>(
        sql`SELECT name, limits_json AS "limitsJson" FROM ${workflows} WHERE name = ANY(${sql.param(request.workflows)}::text[])`,
      )
    ).rows;
  const limits = pickLimits(request.workflows, published, request.limits);
  const tried: string[] = [];
  // The time once the lock is ours, not the transaction's start (now()), which waiting for the lock makes stale: a
  // start is recorded, and a rate window judged, at the moment the take is decided, in the order the lock gives.
  const decided = sql`(extract(epoch from clock_timestamp())::float8 + ${c.skew()}::float8)`;
  for (let round = 0; round < 3; round++) {
    const outcome = await c.inTransaction(async (client): Promise<{ row: RunRow | undefined } | { lost: string }> => {
      const candidate = (
        await c.once<{ id: string; workflow: string }>(candidateStatement(c, request, limits, tried), undefined, client)
      ).rows[0];
      if (!candidate) return { row: undefined };
      const own = limits[candidate.workflow];
      if (own) {
        await c.once(
          sql`SELECT pg_advisory_xact_lock(hashtextextended(${`waybill-limits:${candidate.workflow}`}, 0))`,
          undefined,
          client,
        );
        const again = withinLimitsSql('postgres', { [candidate.workflow]: own }, 'p', LIMIT_NOW);
        const ok = (
          await c.once<{ ok: boolean }>(
            sql`${withNow(decided, again)}
            SELECT ${sql.raw(again.condition)} AS ok FROM ${runs} p WHERE p.id = ${candidate.id}`,
            undefined,
            client,
          )
        ).rows[0]?.ok;
        if (!ok) return { lost: candidate.id };
      }
      return {
        row: (
          await c.once<RunRow>(
            claimStatement(c, { ...request, runId: candidate.id }, { now: own ? decided : c.now(), underLimits: true }),
            undefined,
            client,
          )
        ).rows[0],
      };
    });
    if (!('lost' in outcome)) return outcome.row;
    tried.push(outcome.lost);
  }
  return undefined;
}

export function postgresRuns(c: PgConnection): RunsOnly {
  /** Per worker, the runs claimRun handed it that it has not finished or released yet. */
  const handedOut = new Map<string, Set<string>>();
  const held = (workerId: string): Set<string> => {
    let ids = handedOut.get(workerId);
    if (!ids) handedOut.set(workerId, (ids = new Set()));
    return ids;
  };

  /**
   * A cancelled run's children go with it, and theirs, unless started detached; each gets its own operator
   * event, in the cancel's transaction. Their parents are cancelled, so the waits they decide wake nobody.
   */
  const cancelChildren = async (client: pg.PoolClient, parentId: string, actor: string): Promise<void> => {
    const cancelled = await c.once<RunRow & { from: RunStatus }>(
      sql`WITH cur AS (SELECT id, status FROM ${runs} WHERE parent_run_id = ${parentId} AND NOT detached
          AND status = ANY(${sql.param([...TRANSITIONS.cancel.from])}::text[]) FOR UPDATE)
        UPDATE ${runs} r SET status = 'cancelled', updated_at = ${c.now()}, finished_at = ${c.now()}, owner = NULL,
          lease_expires_at = NULL, cancelled_with = ${parentId}::text
        FROM cur WHERE r.id = cur.id RETURNING cur.status AS "from", ${RUN}`,
      undefined,
      client,
    );
    for (const { from, ...child } of cancelled.rows) {
      await c.once(
        sql`INSERT INTO ${stepEvents} (run_id, outcome, count, detail, at)
        VALUES (${child.id}, 'operator', 1, ${cascadeDetail(actor, parentId, from)}, ${c.now()})`,
        undefined,
        client,
      );
      await settleChild(c, client, child);
      await cancelChildren(client, child.id, actor);
    }
  };

  /**
   * A retried run brings back its attached children its cancel had cancelled (cancelled_with names it), and
   * theirs, in the retry's transaction, as sqlite/runs.ts retryChildren does: each child's row locked, moved as
   * actOnRun's retry moves a run, its own operator event, and the parent's wait for it open again. The runs
   * retried, a parent before its children.
   */
  const retryChildren = async (
    client: pg.PoolClient,
    parentId: string,
    actor: string,
  ): Promise<{ runId: string; parentId: string }[]> => {
    // FOR UPDATE judges the WHERE again at the newest version of a row changed since the snapshot: a child an
    // operator retried or cancelled meanwhile is judged as that left it.
    const cancelled = await c.once<{ id: string }>(
      sql`SELECT id FROM ${runs} WHERE parent_run_id = ${parentId} AND NOT detached AND status = 'cancelled'
          AND cancelled_with = ${parentId}::text
        ORDER BY created_at, id COLLATE "C" FOR UPDATE`,
      undefined,
      client,
    );
    const retried: { runId: string; parentId: string }[] = [];
    for (const child of cancelled.rows) {
      await c.once(
        sql`WITH moved AS (UPDATE ${runs} SET status = ${TRANSITIONS.retry.to}, updated_at = ${c.now()}, error = NULL,
            finished_at = NULL, started_at = NULL, owner = NULL, lease_expires_at = NULL, cancelled_with = NULL
          WHERE id = ${child.id} RETURNING id)
        INSERT INTO ${stepEvents} (run_id, outcome, count, detail, at)
        SELECT id, 'operator', 1, ${retriedWithParentDetail(actor, parentId)}, ${c.now()} FROM moved`,
        undefined,
        client,
      );
      await reopenChildWait(c, client, parentId, child.id);
      retried.push({ runId: child.id, parentId }, ...(await retryChildren(client, child.id, actor)));
    }
    return retried;
  };

  /**
   * The children a retry whose answer was lost brought back, found as retryChildren left them: each with its own
   * event of that retry, recorded since the call began.
   */
  const retriedEarlier = async (
    client: pg.PoolClient,
    parentId: string,
    actor: string,
    sinceS: number,
  ): Promise<{ runId: string; parentId: string }[]> => {
    const found = await c.once<{ id: string }>(
      sql`SELECT r.id FROM ${runs} r WHERE r.parent_run_id = ${parentId} AND NOT r.detached AND EXISTS (
        SELECT 1 FROM ${stepEvents} e WHERE e.run_id = r.id AND e.outcome = 'operator'
          AND e.detail = ${retriedWithParentDetail(actor, parentId)} AND e.at >= ${c.now()} - ${sinceS}::float8)
      ORDER BY r.created_at, r.id COLLATE "C"`,
      undefined,
      client,
    );
    const retried: { runId: string; parentId: string }[] = [];
    for (const { id } of found.rows)
      retried.push({ runId: id, parentId }, ...(await retriedEarlier(client, id, actor, sinceS)));
    return retried;
  };

  /** withRetry, telling each attempt whether an earlier one's outcome is unknown and since when to look. */
  const attempts = <T>(what: string, fn: (attempt: Attempt) => Promise<T>): Promise<T> => {
    const began = performance.now();
    let outcomeUnknown = false;
    return withRetry(what, () => fn({ outcomeUnknown, sinceS: (performance.now() - began) / 1000 + SLACK_S }), {
      onTransient: (error) => {
        outcomeUnknown ||= mayHaveRun(error);
      },
    });
  };

  const getRun = async (id: string): Promise<RunRow | null> =>
    (await c.readBuilt('getRun', c.orm.select().from(runs).where(eq(runs.id, id)))).at(0) ?? null;

  return {
    async createRun(run) {
      const tags = run.tags ?? [];
      const keys = Object.keys(run.metadata ?? {});
      const values = Object.values(run.metadata ?? {});
      const row = await attempts('createRun', async ({ outcomeUnknown, sinceS }) => {
        const now = c.now();
        const created = (
          await c.once<RunRow>(
            // Its tags and metadata in the same statement: a run is never seen without them. An attached child of a
            // cancelled parent is made cancelled, as the cancel would have made it. The parent's row is read under
            // a share lock: a cancel in flight is waited for and its status read, and one that comes after waits for
            // this insert, so its cascade finds the child.
            sql`WITH parent AS (SELECT p.status FROM ${runs} p WHERE p.id = ${run.parentRunId ?? null}::text FOR SHARE),
          orphaned AS (SELECT NOT ${run.detached ?? false} AND EXISTS (SELECT 1 FROM parent WHERE status = 'cancelled') AS yes),
          made AS (INSERT INTO ${runs} AS r (id, workflow, input_json, status, total_steps, budget_usd, created_at,
            updated_at, parent_run_id, detached, priority, traceparent, finished_at, cancelled_with)
          SELECT ${run.id}, ${run.workflow}, ${run.inputJson}, CASE WHEN o.yes THEN 'cancelled' ELSE 'queued' END,
            ${run.totalSteps}::int, ${run.budgetUsd ?? null}::float8, ${now}, ${now}, ${run.parentRunId ?? null}::text,
            ${run.detached ?? false}, ${run.priority ?? 0}::int, ${run.traceparent ?? null}::text,
            CASE WHEN o.yes THEN ${now} END, CASE WHEN o.yes THEN ${run.parentRunId ?? null}::text END
          FROM orphaned o
          ON CONFLICT (id) DO NOTHING RETURNING ${RUN}),
          told AS (INSERT INTO ${stepEvents} (run_id, outcome, count, detail, at)
            SELECT made.id, 'operator', 1, ${bornCancelledDetail(run.parentRunId ?? '')}, ${now} FROM made
            WHERE made.status = 'cancelled'),
          tagged AS (INSERT INTO run_tags (run_id, tag) SELECT made.id, t.tag FROM made, unnest(${sql.param(tags)}::text[]) t (tag)
            ON CONFLICT DO NOTHING),
          described AS (INSERT INTO run_metadata (run_id, key, value)
            SELECT made.id, m.key, m.value FROM made, unnest(${sql.param(keys)}::text[], ${sql.param(values)}::text[]) m (key, value)
            ON CONFLICT DO NOTHING)
          SELECT * FROM made`,
            'waybill_run_create',
          )
        ).rows[0];
        if (created || !outcomeUnknown) return created;
        // Is the row that holds the id the one the lost attempt wrote? Same workflow, input and total, created since the call began.
        return (
          await c.once<RunRow>(sql`SELECT ${RUN} FROM ${runs} r WHERE r.id = ${run.id} AND r.workflow = ${run.workflow}
          AND r.input_json = ${run.inputJson} AND r.total_steps IS NOT DISTINCT FROM ${run.totalSteps}::int
          AND r.created_at >= ${c.now()} - ${sinceS}::float8`)
        ).rows[0];
      });
      if (!row) throw new ConflictError(`run ${run.id}`);
      return row;
    },

    getRun,

    async keepTraceparent(id, traceparent) {
      await withRetry('keepTraceparent', () =>
        c.orm
          .update(runs)
          .set({ traceparent })
          .where(and(eq(runs.id, id), isNull(runs.traceparent))),
      );
    },

    async childrenOf(parentId, first) {
      const [counts, newest] = await Promise.all([
        c.readBuilt(
          'childrenOf',
          c.orm
            .select({ status: runs.status, n: sql<number>`count(*)::int` })
            .from(runs)
            .where(eq(runs.parentRunId, parentId))
            .groupBy(runs.status),
        ),
        c.readBuilt(
          'childrenOf',
          c.orm
            .select({ id: runs.id, workflow: runs.workflow, status: runs.status, detached: runs.detached })
            .from(runs)
            .where(eq(runs.parentRunId, parentId))
            .orderBy(desc(runs.updatedAt), sql`${runs.id} COLLATE "C"`)
            .limit(first),
        ),
      ]);
      return { byStatus: Object.fromEntries(counts.map((row) => [row.status, Number(row.n)])), first: newest };
    },

    // Safe to run twice: a retried set writes the same value. Nothing updated (no such run, or `ifUnset` and one
    // is set) reads the row as it is.
    async setRunBudget(id, budgetUsd, options) {
      const unset = options?.ifUnset ? sql`AND r.budget_usd IS NULL` : sql``;
      const updated = (
        await withRetry('setRunBudget', () =>
          c.once<RunRow>(sql`UPDATE ${runs} r SET budget_usd = ${budgetUsd}::float8, updated_at = ${c.now()}
            WHERE r.id = ${id} ${unset} RETURNING ${RUN}`),
        )
      ).rows[0];
      const row = updated ?? (await getRun(id));
      if (!row) throw new NotFoundError(`run ${id}`);
      return row;
    },

    listRuns: (filter) => listRuns(c, filter),

    async listRunHeads(filter) {
      if (filter.workflows?.length === 0) return [];
      return withRetry('listRunHeads', () =>
        c.orm
          .select(runHeadColumns(runs))
          .from(runs)
          .where(runHeadFilter(runs, filter))
          .orderBy(desc(runs.updatedAt))
          .limit(filter.limit),
      );
    },

    /**
     * Takes one runnable run (claimStatement). After a claimRun whose connection died, a running run of ours
     * that the caller was never handed is the one that attempt took: its lease is renewed and it is handed over now.
     */
    async claimRun(request) {
      const mine = held(request.workerId);
      const holding = request.holding ?? [];
      const lease = request.leaseMs / 1000;
      const worker = sql`${request.workerId}::text`;
      const row = await attempts('claimRun', async ({ outcomeUnknown }) => {
        if (outcomeUnknown) {
          const adopted = (
            await c.once<RunRow>(sql`UPDATE ${runs} r SET lease_expires_at = ${c.now()} + ${lease}::float8
            WHERE r.id = (SELECT a.id FROM ${runs} a WHERE a.owner = ${worker} AND a.status = 'running'
                AND a.id <> ALL(${sql.param([...mine, ...holding])}::text[])
              ORDER BY a.updated_at DESC LIMIT 1)
            AND r.owner = ${worker} AND r.status = 'running'
            RETURNING ${RUN}`)
          ).rows[0];
          if (adopted) return adopted;
        }
        // A worker's own limits (for a workflow the store may have no publication of) are pickLimits' to weigh.
        if (Object.values(request.limits ?? {}).some(limitsHold)) return claimWithinLimits(c, request);
        // Two texts, two names: a named statement is one text, and `runId` (a drill's workers) adds a condition.
        const name = request.runId === undefined ? 'waybill_run_claim' : 'waybill_run_claim_one';
        const answer = (
          await c.once<Nullable<RunRow> & { published: Published | null }>(claimStatement(c, request), name)
        ).rows[0];
        if (answer?.published) return claimWithinLimits(c, request, answer.published);
        if (answer?.id == null) return undefined;
        const { published: _, ...taken } = answer;
        return taken as RunRow;
      });
      if (!row) return null;
      mine.add(row.id);
      return row;
    },

    ...postgresLimitUse(c),

    async renewRunLease(id, workerId, leaseMs, attempt) {
      const renewed = await c.query(
        sql`UPDATE ${runs} SET lease_expires_at = ${c.now()} + ${leaseMs / 1000}::float8
        WHERE ${runs.id} = ${id} AND ${runs.owner} = ${workerId} AND ${fence(attempt)} AND ${runs.status} = 'running'`,
        'waybill_run_renew',
      );
      if (renewed.rowCount === 1) return { held: true, status: 'running' as const };
      // Read afresh: the status that made the renewal miss may be newer than the renewal's snapshot.
      return { held: false, status: (await getRun(id))?.status ?? null };
    },

    /** A run paused while its last step ran still completes. */
    async finishRun(id, workerId, outcome, attempt) {
      const error = outcome.error ?? null;
      const output = outcome.outputJson ?? null;
      try {
        return await attempts('finishRun', async ({ outcomeUnknown, sinceS }) => {
          const now = c.now();
          // One transaction with the parent's wait, so a child never ends without telling its parent.
          const { ended, woke } = await c.inTransaction(async (client) => {
            const finished = await c.once<RunRow>(
              sql`UPDATE ${runs} r SET status = ${outcome.status}, error = ${error}, output_json = ${output},
              owner = NULL, lease_expires_at = NULL, finished_at = ${now}, updated_at = ${now}
              WHERE r.id = ${id} AND r.owner = ${workerId} AND (${attempt ?? null}::int IS NULL OR r.attempts = ${attempt ?? null}::int)
              AND r.status IN ('running', 'paused')
              RETURNING ${RUN}`,
              'waybill_run_finish',
              client,
            );
            const row = finished.rows[0];
            if (!row) return { ended: false, woke: null };
            const woke = await settleChild(c, client, row);
            // The alert webhooks' run.failed / run.completed, committed with the end they tell of.
            const event = runEndEvent(row);
            if (event) await enqueueIn(c, client, event, row.finishedAt ?? undefined);
            return { ended: true, woke };
          });
          if (woke) announceWake(woke);
          if (ended) return true;
          if (!outcomeUnknown) return false;
          // Is the run ended the way the lost attempt asked, since the call began?
          return (
            (
              await c.once(sql`SELECT 1 FROM ${runs} WHERE ${runs.id} = ${id} AND ${runs.owner} IS NULL
            AND ${runs.status} = ${outcome.status} AND ${runs.error} IS NOT DISTINCT FROM ${error}::text
            AND ${runs.outputJson} IS NOT DISTINCT FROM ${output}::text AND ${runs.finishedAt} >= ${c.now()} - ${sinceS}::float8`)
            ).rowCount === 1
          );
        });
      } finally {
        // Whatever the answer, the caller stops executing the run once it asked to finish it.
        held(workerId).delete(id);
      }
    },

    async releaseRun(id, workerId, attempt) {
      try {
        await c.query(
          sql`UPDATE ${runs} SET status = CASE status WHEN 'running' THEN 'queued' ELSE status END,
          owner = NULL, lease_expires_at = NULL, updated_at = ${c.now()}
          WHERE ${runs.id} = ${id} AND ${runs.owner} = ${workerId} AND ${fence(attempt)}`,
          'waybill_run_release',
        );
      } finally {
        held(workerId).delete(id);
      }
    },

    /**
     * An operator's action. `cur` locks the run and reads its newest status (READ COMMITTED re-reads a row
     * changed since the snapshot when it locks it), so the transition is judged on the status it changes.
     * No row for an unknown run; `from` and a null id when the status does not allow the action.
     */
    async actOnRun(id, action, actor, alert) {
      let woke: string | null = null;
      const { from, to } = TRANSITIONS[action];
      const target = sql`${to}::text`;
      const result = await attempts('actOnRun', async ({ outcomeUnknown, sinceS }) =>
        c.inTransaction(async (client) => {
          if (outcomeUnknown) {
            // Did the lost attempt land? It did if the run's latest action (an operator event `<action> by …`: the
            // lines its children's ends or its retry's reopened waits add are passed over) is this action by this
            // actor, recorded since the call began.
            const start = `${action} by ${actor}: `;
            const end = ` → ${to}`;
            const acted = (
              await c.once<RunRow>(sql`SELECT ${RUN} FROM ${runs} r WHERE r.id = ${id} AND EXISTS (
            SELECT 1 FROM (SELECT e.detail, e.at FROM ${stepEvents} e WHERE e.run_id = ${id} AND e.outcome = 'operator'
              AND split_part(e.detail, ' by ', 1) = ANY(${sql.param(Object.keys(TRANSITIONS))}::text[])
              ORDER BY e.id DESC LIMIT 1) last
            WHERE starts_with(last.detail, ${start}) AND right(last.detail, char_length(${end})) = ${end}
              AND last.at >= ${c.now()} - ${sinceS}::float8)`)
            ).rows[0];
            if (acted && action === 'retry')
              return { from: null, ...acted, retriedChildren: await retriedEarlier(client, id, actor, sinceS) };
            if (acted) return { from: null, ...acted };
          }
          const row = (
            await c.once<{ from: RunStatus } & RunRow>(
              sql`WITH t AS (SELECT ${c.now()} AS now),
          cur AS (SELECT c.id AS cur_id, c.status AS cur_status FROM ${runs} c WHERE c.id = ${id} FOR UPDATE),
          upd AS (UPDATE ${runs} r SET status = ${target}, updated_at = t.now,
              error = CASE WHEN ${target} = 'queued' THEN NULL ELSE r.error END,
              finished_at = CASE WHEN ${target} = 'cancelled' THEN t.now WHEN ${target} = 'queued' THEN NULL ELSE r.finished_at END,
              -- A retry's next pick is a start, counted and held by a rate limit as one: sqlite/runs.ts ACT says why.
              started_at = CASE WHEN ${target} = 'queued' AND r.status IN ('failed', 'cancelled') THEN NULL
                ELSE r.started_at END,
              -- A paused running run keeps its owner until that worker notices and lets go (renewRunLease tells it):
              -- its last step may still complete it. A cancelled one is abandoned: nothing its worker does can finish
              -- it, the worker learns of it from the status alone, and a dead worker would otherwise own it forever.
              owner = CASE WHEN r.status = 'running' AND ${target} <> 'cancelled' THEN r.owner ELSE NULL END,
              lease_expires_at = CASE WHEN r.status = 'running' AND ${target} <> 'cancelled' THEN r.lease_expires_at ELSE NULL END,
              -- An operator's own cancel, and every move out of cancelled: sqlite/runs.ts ACT says why.
              cancelled_with = NULL
            FROM cur, t WHERE r.id = cur.cur_id AND cur.cur_status = ANY(${sql.param([...from])}::text[])
            RETURNING ${RUN}),
          ev AS (INSERT INTO ${stepEvents} (run_id, outcome, count, detail, at)
            SELECT cur.cur_id, 'operator', 1, ${action}::text || ' by ' || ${actor}::text || ': ' || cur.cur_status || ' → ' || ${target}, t.now
            FROM cur, t WHERE EXISTS (SELECT 1 FROM upd))
          SELECT cur.cur_status AS "from", upd.* FROM cur LEFT JOIN upd ON true`,
              'waybill_run_act',
              client,
            )
          ).rows[0];
          if (row?.id && alert) await enqueueIn(c, client, alert);
          if (row?.id && to === 'cancelled') {
            const { from: _, ...run } = row;
            woke = await settleChild(c, client, run);
            await cancelChildren(client, id, actor);
          }
          if (row?.id && action === 'retry') return { ...row, retriedChildren: await retryChildren(client, id, actor) };
          return row;
        }),
      );
      if (woke) announceWake(woke);
      if (!result) throw new NotFoundError(`run ${id}`);
      const { from: status, ...row } = result;
      // A run whose status does not allow the action comes back with its status and no updated row.
      if (row.id === null) throw new InvalidTransitionError(id, action, status!);
      return row;
    },
  };
}
