/**
 * The step protocol on PostgreSQL: progress, claim, renew, commit, release, and a library loop's run row.
 * Same semantics as sqlite/steps.ts; the differences are how they are reached:
 *
 * - Every operation is one round trip and its own transaction. The claim is a PL/pgSQL function rather than
 *   one statement, because it must read `committed` again, with a fresh snapshot, after inserting a claim
 *   (drizzle/pg/0001_claim_function.sql says why).
 * - Time is the database's clock (skew.ts). Within one statement now() does not move, so every time a
 *   statement writes or compares is the same instant.
 * - Lost connections, serialization failures and deadlocks are retried with jittered backoff (retry.ts).
 *   A statement whose connection died after it was sent may have committed: the claim recognises its own
 *   token, and the commit recognises its own row (see commit below).
 *
 * Isolation is READ COMMITTED. Where a decision reads one row and writes another, the comments say why a
 * concurrent statement cannot slip between them. Each statement is a Drizzle `sql` template that names the
 * tables and columns through the schema and puts every value at its place as a named placeholder, cast there;
 * the call beside it fills the placeholders by name. They are built once, at load (connection.ts: prepare).
 */
import { sql, type SQL } from 'drizzle-orm';
import type pg from 'pg';
import { LeaseLostError, StoreUnavailableError } from '../../errors';
import { PRIOR_STATE_MAX_CHARS } from '../columns';
import { claims, committed, progress, runs, stepEvents } from '../schema.pg';
import type {
  ClaimOutcome,
  ClaimRow,
  CommitOutcome,
  CommittedRow,
  ProgressRow,
  ProgressWrite,
  RunStatus,
  StepStore,
} from '../types';
import { committedByKey, eventInsert, names, type EventInput } from './columns';
import { prepare, type PgConnection, type Prepared } from './connection';
import { beginLoopRun, endLoopRun } from './loop-runs';
import { mayHaveRun, withRetry } from './retry';

type Stored<T> = Omit<T, 'orphaned'>;
/** What waybill_claim answers, one row. */
export type ClaimResult = {
  kind: 'committed' | 'taken' | 'mine' | 'fresh' | 'held' | 'retry';
  done: CommittedRow | null;
  holder: Stored<ClaimRow> | null;
  old: Stored<ClaimRow> | null;
  attempt: number | null;
  leaseExpiresAt: number | null;
  msUntilExpiry: number | null;
};

/** A statement that found its row changed under its snapshot runs again; this many times means a bug. */
const MAX_CLAIM_ROUNDS = 100;

const P = (name: string) => sql.placeholder(name);
/** A progress state longer than this is not copied beside a result (columns.ts says why). */
const PRIOR_LIMIT = sql.raw(String(PRIOR_STATE_MAX_CHARS));
/** The statement's now: the database's clock plus the injected skew (skew.ts). */
const NOW = sql`(extract(epoch from now())::float8 + ${P('skew')}::float8)`;

/** The call of waybill_claim with the placeholders `${prefix}…` (every argument cast, as its signature has it). */
function claimCall(prefix: string): SQL {
  const v = (name: string) => P(`${prefix}${name}`);
  return sql`waybill_claim(${v('Key')}::text, ${v('Run')}::text, ${v('Token')}::text, ${v('Worker')}::text, ${v('Step')}::int,
    ${v('Attempt')}::int, ${v('Lease')}::float8, ${v('Ttl')}::float8, ${P('skew')}::float8)`;
}

/**
 * The progress upsert with counter deltas and the folded skipped/awaited events, as two CTEs over `t` (the
 * statement's now), written only when `gate` holds. Its values are the placeholders p…; a null pRun writes
 * nothing.
 */
function progressWrite(gate: SQL): SQL {
  return sql`prog AS (
  INSERT INTO ${progress} (${names(
    progress.runId,
    progress.step,
    progress.stateJson,
    progress.updatedAt,
    progress.executed,
    progress.skipped,
    progress.awaited,
    progress.saveMs,
  )})
  SELECT ${P('pRun')}::text, ${P('pStep')}::int, ${P('pState')}::text, t.now, ${P('pExecuted')}::int, ${P('pSkipped')}::int,
    ${P('pAwaited')}::int, ${P('pSaveMs')}::float8
  FROM t WHERE ${P('pRun')}::text IS NOT NULL ${gate}
  ON CONFLICT (run_id) DO UPDATE SET step = excluded.step, state_json = excluded.state_json,
    updated_at = excluded.updated_at, executed = progress.executed + excluded.executed,
    skipped = progress.skipped + excluded.skipped, awaited = progress.awaited + excluded.awaited,
    save_ms = coalesce(excluded.save_ms, progress.save_ms)
  RETURNING 1),
folded AS (INSERT INTO ${stepEvents} (run_id, step, outcome, count, at)
  SELECT ${P('pRun')}::text, ${P('pStep')}::int, v.outcome, v.n, t.now
  FROM t, (VALUES ('skipped', ${P('pSkipped')}::int), ('awaited', ${P('pAwaited')}::int)) AS v (outcome, n)
  WHERE v.n > 0 AND EXISTS (SELECT 1 FROM prog))`;
}

/** SAVE_PROGRESS's values; COMMIT's progress placeholders are the same names. Plain literals: on the hot path. */
function progressValues(p: ProgressWrite, skew: number) {
  return {
    pRun: p.runId,
    pStep: p.step,
    pState: p.stateJson,
    pExecuted: p.executed,
    pSkipped: p.skipped,
    pAwaited: p.awaited,
    pSaveMs: p.saveMs ?? null,
    skew,
  };
}

// The hot path's statements, each built once (connection.ts says why) and named: node-postgres prepares a
// named statement once per connection.
const LOAD_PROGRESS = prepare<{ runId: string }>(
  'waybill_progress',
  sql`SELECT ${progress.runId} AS "runId", ${progress.step},
  ${progress.stateJson} AS "stateJson", ${progress.updatedAt} AS "updatedAt", ${progress.executed}, ${progress.skipped},
  ${progress.awaited}, ${progress.saveMs} AS "saveMs" FROM ${progress} WHERE ${progress.runId} = ${P('runId')}`,
);

const SAVE_PROGRESS = prepare<ReturnType<typeof progressValues>>(
  'waybill_save_progress',
  sql`WITH t AS (SELECT ${NOW} AS now), ${progressWrite(sql``)} SELECT 1`,
);

const CLAIM = prepare<Record<string, unknown>>('waybill_claim', sql`SELECT * FROM ${claimCall('c')}`);

const RENEW = prepare<{ key: string; token: string; lease: number; skew: number }>(
  'waybill_renew',
  sql`UPDATE ${claims} SET lease_expires_at = t.now + ${P('lease')}::float8, heartbeat_at = t.now
  FROM (SELECT ${NOW} AS now) t WHERE ${claims.idemKey} = ${P('key')} AND ${claims.token} = ${P('token')}`,
);

/**
 * Phase 3, one statement. The claim is deleted only where the token is ours; `committed` is inserted only if
 * that delete hit a row, and the progress only if the insert did. A holder fenced off (taken over, expired,
 * resolved) deletes nothing, so writes nothing. The insert does nothing on a conflict, so a result is never
 * written twice and never replaced: a delete that hit with nothing inserted means the key was committed by
 * someone else while we held the claim (an outside client), and our claim is simply gone with it: LeaseLost.
 * heldByUs is only looked up when the delete missed, for the lost-reply check.
 *
 * The next key's claim runs only once the insert has happened (the constant gate keeps the function from
 * being called otherwise), inside this statement's transaction: one flush to disk covers both. The function
 * reads `committed` for that key with fresh snapshots of its own, as a claim on its own does.
 *
 * The run's status comes back with it (null without a runs row), read from the statement's snapshot: a pause
 * committed before this statement began is seen by this commit, one after it by the next. A paused or
 * cancelled run has no next step claimed: the loop stops after this one.
 *
 * `INSERT INTO committed` is written out, not `${committed}` (which renders "committed"): it is how an
 * operator, and test/postgres/cancel.test.ts, find running commits in pg_stat_activity.
 */
const COMMIT = prepare<Record<string, unknown>>(
  'waybill_commit',
  sql`WITH t AS (SELECT ${NOW} AS now),
del AS (DELETE FROM ${claims} WHERE ${claims.idemKey} = ${P('key')}::text AND ${claims.token} = ${P('token')}::text RETURNING 1),
ins AS (INSERT INTO committed (${names(
    committed.idemKey,
    committed.runId,
    committed.resultJson,
    committed.committedAt,
    committed.step,
    committed.fingerprint,
    committed.workerId,
    committed.durationMs,
    committed.source,
    committed.inputJson,
    committed.priorStep,
    committed.priorStateJson,
  )})
  SELECT ${P('key')}::text, ${P('run')}::text, ${P('result')}::text, t.now, ${P('step')}::int, ${P('fingerprint')}::text,
    ${P('worker')}::text, ${P('duration')}::float8, 'executed', ${P('input')}::text,
    CASE WHEN pr.run_id IS NULL THEN 0 WHEN length(pr.state_json) <= ${PRIOR_LIMIT} THEN pr.step END,
    CASE WHEN pr.run_id IS NULL THEN '{}' WHEN length(pr.state_json) <= ${PRIOR_LIMIT} THEN pr.state_json END
  FROM t LEFT JOIN ${progress} pr ON pr.run_id = ${P('run')}::text
  WHERE EXISTS (SELECT 1 FROM del)
  ON CONFLICT (idem_key) DO NOTHING RETURNING 1),
${progressWrite(sql`AND EXISTS (SELECT 1 FROM ins)`)}
SELECT d.n AS deleted, (SELECT count(*) FROM ins)::int AS inserted,
  d.n = 0 AND EXISTS (SELECT 1 FROM ${claims} WHERE ${claims.idemKey} = ${P('key')}::text AND ${claims.token} = ${P('token')}::text)
    AS "heldByUs",
  (SELECT row_to_json(c) FROM ${claimCall('n')} c
    WHERE ${P('nKey')}::text IS NOT NULL AND EXISTS (SELECT 1 FROM ins) AND r.status IS DISTINCT FROM 'paused'
      AND r.status IS DISTINCT FROM 'cancelled') AS next,
  r.status AS "runStatus"
FROM (SELECT count(*)::int AS n FROM del) d LEFT JOIN ${runs} r ON r.id = ${P('run')}::text`,
);

/**
 * After a commit whose first attempt died with its connection: did that attempt land? The claim is gone either
 * way, so the committed row must be recognised as ours: the same worker, run, step, fingerprint, result and
 * duration (measured to a fraction of a microsecond, so no other call's).
 */
const LANDED = prepare<Record<string, unknown>>(
  'waybill_landed',
  sql`SELECT 1 FROM ${committed}
  WHERE ${committed.idemKey} = ${P('key')} AND ${committed.source} = 'executed' AND ${committed.runId} = ${P('run')}
    AND ${committed.resultJson} = ${P('result')} AND ${committed.step} IS NOT DISTINCT FROM ${P('step')}::int
    AND ${committed.fingerprint} IS NOT DISTINCT FROM ${P('fingerprint')}::text
    AND ${committed.workerId} IS NOT DISTINCT FROM ${P('worker')}::text AND ${committed.durationMs} = ${P('duration')}::float8`,
);

/**
 * The failed side effect: delete our claim (token-checked) and record the failure, whether or not the claim
 * was still ours; no event for a claim taken ahead and never used (error null). A retry after a lost
 * connection (`retried`) records it only if it deleted the claim itself: a first attempt that landed deleted
 * it and recorded the failure already.
 */
const RELEASE = prepare<Record<string, unknown>>(
  'waybill_release',
  sql`WITH del AS (DELETE FROM ${claims}
    WHERE ${claims.idemKey} = ${P('key')} AND ${claims.token} = ${P('token')} RETURNING 1)
  INSERT INTO ${stepEvents} (run_id, idem_key, step, outcome, count, duration_ms, worker_id, detail, at, attempt,
    max_attempts, retry_at)
  SELECT ${P('run')}::text, ${P('key')}::text, ${P('step')}::int, 'failed', 1, ${P('duration')}::float8, ${P('worker')}::text,
    ${P('error')}::text, ${NOW}, ${P('attempt')}::int, ${P('maxAttempts')}::int, ${P('retryAt')}::float8
  WHERE ${P('error')}::text IS NOT NULL AND (NOT ${P('retried')}::boolean OR EXISTS (SELECT 1 FROM del))`,
);

export function postgresSteps(c: PgConnection): Omit<StepStore, 'dialect'> {
  const event = (e: EventInput) => c.query(eventInsert(e, c.now()), 'waybill_event');
  const retried = <R extends pg.QueryResultRow, V>(what: string, statement: Prepared<V>, values: () => V) =>
    withRetry(what, () => c.exec<R, V>(statement, values()));

  return {
    async loadProgress(runId) {
      return (
        (await retried<ProgressRow, { runId: string }>('loadProgress', LOAD_PROGRESS, () => ({ runId }))).rows[0] ??
        null
      );
    },

    async saveProgress(w) {
      // A retry of an attempt that committed but lost its answer adds the counter deltas twice: the map
      // itself is idempotent, the counters are metrics. Commits, which carry most progress writes, cannot.
      await retried('saveProgress', SAVE_PROGRESS, () => progressValues(w, c.skew()));
    },

    async claim(r) {
      for (let round = 1; round <= MAX_CLAIM_ROUNDS; round++) {
        const { rows } = await retried<ClaimResult, Record<string, unknown>>('claim', CLAIM, () => ({
          cKey: r.idemKey,
          cRun: r.runId,
          cToken: r.token,
          cWorker: r.workerId,
          cStep: r.step,
          cAttempt: r.attempt,
          cLease: r.leaseMs / 1000,
          cTtl: r.claimTtlMs / 1000,
          skew: c.skew(),
        }));
        const outcome = claimOutcome(rows[0]!);
        if (outcome) return outcome;
      }
      throw new StoreUnavailableError(`claim on ${r.idemKey} kept racing concurrent writers`, undefined);
    },

    async renewClaim(idemKey, token, leaseMs) {
      const result = await retried('renewClaim', RENEW, () => ({
        key: idemKey,
        token,
        lease: leaseMs / 1000,
        skew: c.skew(),
      }));
      return result.rowCount === 1;
    },

    /**
     * A commit whose connection died after the statement was sent may have landed. Retried, it then finds its
     * claim gone and would report LeaseLost for a result that is in the table. The rule: only after such a
     * loss, a missed delete is checked against `committed` (LANDED); our own earlier attempt's row means the
     * commit succeeded. Anything else is a lost lease. The statement never writes a second result (the delete
     * is token-fenced, the insert does nothing on conflict), so a retry can at worst fail to recognise its own
     * success, never double-commit.
     */
    async commit(r) {
      const row = {
        key: r.idemKey,
        token: r.token,
        run: r.runId,
        result: r.resultJson,
        step: r.step,
        fingerprint: r.fingerprint,
        worker: r.workerId,
        duration: r.durationMs,
      };
      const p = r.progress;
      const n = r.next;
      // One literal, every placeholder by name (no spreads: this is the hot path).
      const values = {
        key: r.idemKey,
        token: r.token,
        run: r.runId,
        result: r.resultJson,
        step: r.step,
        fingerprint: r.fingerprint,
        worker: r.workerId,
        duration: r.durationMs,
        skew: c.skew(),
        input: r.inputJson ?? null,
        pRun: p ? p.runId : null,
        pStep: p ? p.step : null,
        pState: p ? p.stateJson : null,
        pExecuted: p ? p.executed : null,
        pSkipped: p ? p.skipped : null,
        pAwaited: p ? p.awaited : null,
        pSaveMs: p?.saveMs ?? null,
        nKey: n ? n.idemKey : null,
        nRun: n ? n.runId : null,
        nToken: n ? n.token : null,
        nWorker: n ? n.workerId : null,
        nStep: n ? n.step : null,
        nAttempt: n ? n.attempt : null,
        nLease: n ? n.leaseMs / 1000 : null,
        nTtl: n ? n.claimTtlMs / 1000 : null,
      };
      let outcomeUnknown = r.mayHaveLanded ?? false;
      type Row = {
        deleted: number;
        inserted: number;
        heldByUs: boolean;
        next: ClaimResult | null;
        runStatus: RunStatus | null;
      };
      const settled = await withRetry(
        'commit',
        async (): Promise<CommitOutcome | { lost: string | undefined }> => {
          const result = (await c.exec<Row, typeof values>(COMMIT, values)).rows[0]!;
          if (result.inserted === 1)
            return { next: result.next ? claimOutcome(result.next) : null, runStatus: result.runStatus };
          // Landed or not, the next claim is then unknown: the caller claims again with the same token.
          if (outcomeUnknown && (await c.exec(LANDED, row)).rowCount === 1)
            return { next: null, runStatus: result.runStatus };
          return {
            lost:
              result.deleted === 1 || result.heldByUs ? 'the key was committed by someone else meanwhile' : undefined,
          };
        },
        {
          onTransient: (error) => {
            outcomeUnknown ||= mayHaveRun(error);
          },
        },
      );
      if ('runStatus' in settled) return settled;
      const error = new LeaseLostError(r.idemKey, settled.lost);
      await event({
        runId: r.runId,
        idemKey: r.idemKey,
        step: r.step,
        outcome: 'lease_lost',
        workerId: r.workerId,
        durationMs: r.durationMs,
        detail: error.message,
        attempt: r.attempt ?? null,
      });
      throw error;
    },

    async releaseClaim(r) {
      let outcomeUnknown = false;
      await withRetry(
        'release',
        () =>
          c.exec(RELEASE, {
            key: r.idemKey,
            token: r.token,
            run: r.runId,
            step: r.step,
            duration: r.durationMs,
            worker: r.workerId,
            error: r.error,
            attempt: r.attempt ?? null,
            maxAttempts: r.maxAttempts ?? null,
            retryAt: r.retryAt ?? null,
            retried: outcomeUnknown,
            skew: c.skew(),
          }),
        {
          onTransient: (error) => {
            outcomeUnknown ||= mayHaveRun(error);
          },
        },
      );
    },

    async getCommitted(idemKey) {
      const { rows } = await c.query<CommittedRow>(committedByKey(idemKey), 'waybill_committed');
      return rows[0] ?? null;
    },

    async recordEvent(e) {
      await event({
        ...e,
        idemKey: e.idemKey ?? null,
        step: e.step ?? null,
        workerId: e.workerId ?? null,
        detail: e.detail ?? null,
      });
    },

    beginLoopRun: (r) => beginLoopRun(c, r),
    endLoopRun: (r) => endLoopRun(c, r),
  };
}

/** What waybill_claim decided, as claim() reports it; null for `retry` (the key changed under it: claim again). */
export function claimOutcome(row: ClaimResult): ClaimOutcome | null {
  switch (row.kind) {
    case 'committed':
      return {
        kind: 'committed',
        row: {
          ...row.done!,
          forkedFrom: row.done!.forkedFrom ?? null,
          inputJson: row.done!.inputJson ?? null,
          priorStep: row.done!.priorStep ?? null,
          priorStateJson: row.done!.priorStateJson ?? null,
        },
      };
    case 'held':
      return { kind: 'held', holder: claimRow(row.holder!, false), msUntilExpiry: row.msUntilExpiry! };
    case 'taken':
      return {
        kind: 'claimed',
        attempt: row.attempt!,
        leaseExpiresAt: row.leaseExpiresAt!,
        tookOverFrom: claimRow(row.old!, true),
      };
    case 'fresh':
    case 'mine':
      return { kind: 'claimed', attempt: row.attempt!, leaseExpiresAt: row.leaseExpiresAt!, tookOverFrom: null };
    case 'retry':
      return null;
  }
}

function claimRow(row: Stored<ClaimRow>, orphaned: boolean): ClaimRow {
  return {
    idemKey: row.idemKey,
    runId: row.runId,
    claimedAt: row.claimedAt,
    token: row.token,
    workerId: row.workerId,
    leaseExpiresAt: row.leaseExpiresAt,
    heartbeatAt: row.heartbeatAt,
    step: row.step,
    attempt: row.attempt,
    orphaned,
  };
}
