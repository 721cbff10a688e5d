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
 * concurrent statement cannot slip between them. Each statement is built where its values are: Drizzle's
 * `sql` puts every value at its place, cast there, and names the tables and columns through the schema.
 */
import { sql, type SQL } from 'drizzle-orm';
import { LeaseLostError, StoreUnavailableError } from '../../errors';
import { claims, committed, progress, runs, stepEvents } from '../schema.pg';
import type { ClaimOutcome, ClaimRequest, ClaimRow, CommitOutcome, CommittedRow, ProgressRow, ProgressWrite, RunStatus, StepStore } from '../types';
import { committedByKey, eventInsert, names, type EventInput } from './columns';
import type { PgConnection } from './connection';
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

/** The call of waybill_claim for one request (every argument cast, as the function's signature has it). */
function claimCall(r: ClaimRequest | undefined, skew: number): SQL {
  return sql`waybill_claim(${r?.idemKey ?? null}::text, ${r?.runId ?? null}::text, ${r?.token ?? null}::text,
    ${r?.workerId ?? null}::text, ${r?.step ?? null}::int, ${r?.attempt ?? null}::int,
    ${r ? r.leaseMs / 1000 : null}::float8, ${r ? r.claimTtlMs / 1000 : null}::float8, ${skew}::float8)`;
}

/**
 * The progress upsert with counter deltas and the folded skipped/awaited events, as two CTEs over `t` (the
 * statement's now), written only when `gate` holds. Without a write (`p` undefined) it writes nothing.
 */
function progressWrite(p: ProgressWrite | undefined, gate: SQL): SQL {
  const runId = sql`${p?.runId ?? null}::text`;
  const step = sql`${p?.step ?? null}::int`;
  const skipped = sql`${p?.skipped ?? null}::int`;
  const awaited = sql`${p?.awaited ?? null}::int`;
  return sql`prog AS (
  INSERT INTO ${progress} (${names(progress.runId, progress.step, progress.stateJson, progress.updatedAt, progress.executed,
    progress.skipped, progress.awaited, progress.saveMs)})
  SELECT ${runId}, ${step}, ${p?.stateJson ?? null}::text, t.now, ${p?.executed ?? null}::int, ${skipped}, ${awaited},
    ${p?.saveMs ?? null}::float8
  FROM t WHERE ${runId} IS NOT NULL ${gate}
  ON CONFLICT (run_id) DO UPDATE SET step = excluded.step, state_json = excluded.state_json,
    updated_at = excluded.updated_at, executed = progress.executed + excluded.executed,
    skipped = progress.skipped + excluded.skipped, awaited = progress.awaited + excluded.awaited,
    save_ms = coalesce(excluded.save_ms, progress.save_ms)
  RETURNING 1),
folded AS (INSERT INTO ${stepEvents} (run_id, step, outcome, count, at)
  SELECT ${runId}, ${step}, v.outcome, v.n, t.now
  FROM t, (VALUES ('skipped', ${skipped}), ('awaited', ${awaited})) AS v (outcome, n)
  WHERE v.n > 0 AND EXISTS (SELECT 1 FROM prog))`;
}

export function postgresSteps(c: PgConnection): Omit<StepStore, 'dialect'> {
  const event = (e: EventInput) => c.query(eventInsert(e, c.now()), 'waybill_event');

  return {
    async loadProgress(runId) {
      const { rows } = await c.query<ProgressRow>(sql`SELECT ${progress.runId} AS "runId", ${progress.step},
        ${progress.stateJson} AS "stateJson", ${progress.updatedAt} AS "updatedAt", ${progress.executed}, ${progress.skipped},
        ${progress.awaited}, ${progress.saveMs} AS "saveMs" FROM ${progress} WHERE ${progress.runId} = ${runId}`, 'waybill_progress');
      return rows[0] ?? null;
    },

    async saveProgress(w) {
      // A retry of an attempt that committed but lost its answer adds the counter deltas twice: the map
      // itself is idempotent, the counters are metrics. Commits, which carry most progress writes, cannot.
      await c.query(sql`WITH t AS (SELECT ${c.now()} AS now),
        ${progressWrite({ ...w, saveMs: w.saveMs ?? null }, sql``)}
        SELECT 1`, 'waybill_save_progress');
    },

    async claim(r) {
      for (let round = 1; round <= MAX_CLAIM_ROUNDS; round++) {
        const { rows } = await c.query<ClaimResult>(sql`SELECT * FROM ${claimCall(r, c.skew())}`, 'waybill_claim');
        const outcome = claimOutcome(rows[0]!);
        if (outcome) return outcome;
      }
      throw new StoreUnavailableError(`claim on ${r.idemKey} kept racing concurrent writers`, undefined);
    },

    async renewClaim(idemKey, token, leaseMs) {
      const result = await c.query(sql`UPDATE ${claims} SET lease_expires_at = t.now + ${leaseMs / 1000}::float8, heartbeat_at = t.now
        FROM (SELECT ${c.now()} AS now) t WHERE ${claims.idemKey} = ${idemKey} AND ${claims.token} = ${token}`, 'waybill_renew');
      return result.rowCount === 1;
    },

    /**
     * Phase 3, one statement. The claim is deleted only where the token is ours; `committed` is inserted only
     * if that delete hit a row, and the progress only if the insert did. A holder fenced off (taken over,
     * expired, resolved) deletes nothing, so writes nothing. The insert does nothing on a conflict, so a
     * result is never written twice and never replaced: a delete that hit with nothing inserted means the key
     * was committed by someone else while we held the claim (an outside client), and our claim is simply gone
     * with it: LeaseLost. heldByUs is only looked up when the delete missed, for the lost-reply check.
     *
     * The next key's claim runs only once the insert has happened (the constant gate keeps the function from
     * being called otherwise), inside this statement's transaction: one flush to disk covers both. The
     * function reads `committed` for that key with fresh snapshots of its own, as a claim on its own does.
     *
     * The run's status comes back with it (null without a runs row), read from the statement's snapshot: a
     * pause committed before this statement began is seen by this commit, one after it by the next. A paused
     * or cancelled run has no next step claimed: the loop stops after this one.
     *
     * A commit whose connection died after the statement was sent may have landed. Retried, it then finds its
     * claim gone and would report LeaseLost for a result that is in the table. The rule: only after such a
     * loss, a missed delete is checked against `committed`; a row with this call's worker, run, step,
     * fingerprint, result and duration (measured to a fraction of a microsecond, so no other call's) is our
     * own earlier attempt, and the commit succeeded. Anything else is a lost lease. The statement never
     * writes a second result (the delete is token-fenced, the insert does nothing on conflict), so a retry
     * can at worst fail to recognise its own success, never double-commit.
     */
    async commit(r) {
      // `INSERT INTO committed` is written out, not `${committed}` (which renders "committed"): it is how an
      // operator, and test/postgres/cancel.test.ts, find running commits in pg_stat_activity.
      const key = sql`${r.idemKey}::text`;
      const token = sql`${r.token}::text`;
      const runId = sql`${r.runId}::text`;
      const skew = c.skew();
      const statement = sql`WITH t AS (SELECT (extract(epoch from now())::float8 + ${skew}::float8) AS now),
del AS (DELETE FROM ${claims} WHERE ${claims.idemKey} = ${key} AND ${claims.token} = ${token} RETURNING 1),
ins AS (INSERT INTO committed (${names(committed.idemKey, committed.runId, committed.resultJson, committed.committedAt,
    committed.step, committed.fingerprint, committed.workerId, committed.durationMs, committed.source)})
  SELECT ${key}, ${runId}, ${r.resultJson}::text, t.now, ${r.step}::int, ${r.fingerprint}::text, ${r.workerId}::text,
    ${r.durationMs}::float8, 'executed' FROM t
  WHERE EXISTS (SELECT 1 FROM del)
  ON CONFLICT (idem_key) DO NOTHING RETURNING 1),
${progressWrite(r.progress, sql`AND EXISTS (SELECT 1 FROM ins)`)}
SELECT d.n AS deleted, (SELECT count(*) FROM ins)::int AS inserted,
  d.n = 0 AND EXISTS (SELECT 1 FROM ${claims} WHERE ${claims.idemKey} = ${key} AND ${claims.token} = ${token}) AS "heldByUs",
  (SELECT row_to_json(c) FROM ${claimCall(r.next, skew)} c
    WHERE ${r.next?.idemKey ?? null}::text IS NOT NULL AND EXISTS (SELECT 1 FROM ins) AND r.status IS DISTINCT FROM 'paused'
      AND r.status IS DISTINCT FROM 'cancelled') AS next,
  r.status AS "runStatus"
FROM (SELECT count(*)::int AS n FROM del) d LEFT JOIN ${runs} r ON r.id = ${runId}`;
      const landed = sql`SELECT 1 FROM ${committed} WHERE ${committed.idemKey} = ${r.idemKey} AND ${committed.source} = 'executed'
        AND ${committed.runId} = ${r.runId} AND ${committed.resultJson} = ${r.resultJson}
        AND ${committed.step} IS NOT DISTINCT FROM ${r.step}::int AND ${committed.fingerprint} IS NOT DISTINCT FROM ${r.fingerprint}::text
        AND ${committed.workerId} IS NOT DISTINCT FROM ${r.workerId}::text AND ${committed.durationMs} = ${r.durationMs}::float8`;

      let outcomeUnknown = r.mayHaveLanded ?? false;
      type Row = { deleted: number; inserted: number; heldByUs: boolean; next: ClaimResult | null; runStatus: RunStatus | null };
      const settled = await withRetry('commit', async (): Promise<CommitOutcome | { lost: string | undefined }> => {
        const row = (await c.once<Row>(statement, 'waybill_commit')).rows[0]!;
        if (row.inserted === 1) return { next: row.next ? claimOutcome(row.next) : null, runStatus: row.runStatus };
        if (outcomeUnknown) {
          // After a commit whose first attempt died with its connection: did that attempt land? The claim is
          // gone either way, so the committed row must be recognised as ours. Landed or not, the next claim is
          // unknown: the caller claims again with the same token.
          if ((await c.once(landed, 'waybill_landed')).rowCount === 1) return { next: null, runStatus: row.runStatus };
        }
        return { lost: row.deleted === 1 || row.heldByUs ? 'the key was committed by someone else meanwhile' : undefined };
      }, { onTransient: (error) => { outcomeUnknown ||= mayHaveRun(error); } });
      if ('runStatus' in settled) return settled;
      const error = new LeaseLostError(r.idemKey, settled.lost);
      await event({ runId: r.runId, idemKey: r.idemKey, step: r.step, outcome: 'lease_lost', workerId: r.workerId,
        durationMs: r.durationMs, detail: error.message });
      throw error;
    },

    /**
     * The failed side effect: delete our claim (token-checked) and record the failure, whether or not the
     * claim was still ours; no event for a claim taken ahead and never used (error null). A retry after a lost
     * connection records it only if it deleted the claim itself: a first attempt that landed deleted it and
     * recorded the failure already.
     */
    async releaseClaim(r) {
      let outcomeUnknown = false;
      await withRetry('release', () => c.once(sql`WITH del AS (DELETE FROM ${claims}
          WHERE ${claims.idemKey} = ${r.idemKey} AND ${claims.token} = ${r.token} RETURNING 1)
        INSERT INTO ${stepEvents} (run_id, idem_key, step, outcome, count, duration_ms, worker_id, detail, at)
        SELECT ${r.runId}::text, ${r.idemKey}::text, ${r.step}::int, 'failed', 1, ${r.durationMs}::float8, ${r.workerId}::text, ${r.error}::text, ${c.now()}
        WHERE ${r.error}::text IS NOT NULL AND (NOT ${outcomeUnknown}::boolean OR EXISTS (SELECT 1 FROM del))`, 'waybill_release'),
      { onTransient: (error) => { outcomeUnknown ||= mayHaveRun(error); } });
    },

    async getCommitted(idemKey) {
      const { rows } = await c.query<CommittedRow>(committedByKey(idemKey), 'waybill_committed');
      return rows[0] ?? null;
    },

    async recordEvent(e) {
      await event({ ...e, idemKey: e.idemKey ?? null, step: e.step ?? null, workerId: e.workerId ?? null, detail: e.detail ?? null });
    },

    beginLoopRun: (r) => beginLoopRun(c, r),
    endLoopRun: (r) => endLoopRun(c, r),
  };
}

/** What waybill_claim decided, as claim() reports it; null for `retry` (the key changed under it: claim again). */
export function claimOutcome(row: ClaimResult): ClaimOutcome | null {
  switch (row.kind) {
    case 'committed':
      return { kind: 'committed', row: row.done! };
    case 'held':
      return { kind: 'held', holder: claimRow(row.holder!, false), msUntilExpiry: row.msUntilExpiry! };
    case 'taken':
      return { kind: 'claimed', attempt: row.attempt!, leaseExpiresAt: row.leaseExpiresAt!, tookOverFrom: claimRow(row.old!, true) };
    case 'fresh':
    case 'mine':
      return { kind: 'claimed', attempt: row.attempt!, leaseExpiresAt: row.leaseExpiresAt!, tookOverFrom: null };
    case 'retry':
      return null;
  }
}

function claimRow(row: Stored<ClaimRow>, orphaned: boolean): ClaimRow {
  return {
    idemKey: row.idemKey, runId: row.runId, claimedAt: row.claimedAt, token: row.token, workerId: row.workerId,
    leaseExpiresAt: row.leaseExpiresAt, heartbeatAt: row.heartbeatAt, step: row.step, attempt: row.attempt, orphaned,
  };
}
