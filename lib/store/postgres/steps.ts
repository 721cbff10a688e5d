/**
 * The step protocol on PostgreSQL: progress, claim, renew, commit, release, and a library loop's run row.
 * Same semantics as sqlite/steps.ts; the differences are how they are reached:
 *
 * - Every operation is one round trip and its own transaction. The commit and the claim are PL/pgSQL
 *   functions, called for one request or for a batch of them (steps-batch.ts): with group commit on, the
 *   commits (or claims) that many runs of this process have ready at the same moment share one round trip and
 *   its flush to disk. The claim is a function rather than one statement because it must read `committed`
 *   again, with a fresh snapshot, after inserting a claim (functions/claim.ts says why).
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
import { sql } from 'drizzle-orm';
import type pg from 'pg';
import { LeaseLostError, StoreUnavailableError } from '../../errors';
import type { ClaimOutcome, ClaimRow, CommittedRow, ProgressRow, StepStore } from '../contract';
import { claims, progress, stepEvents } from '../schema/pg';
import { ownRunNext, ownRunOutcome } from '../shared/key-owner';
import { committedByKey, type EventInput, eventInsert, eventInsertOnce } from './columns';
import { type PgConnection, type Prepared, prepare } from './connection';
import { beginLoopRun, endLoopRun } from './loop-runs';
import { mayHaveRun, withRetry } from './retry';
import { type BatchOptions, type ClaimResult, claimBatch, commitBatch, perCall, progressFields } from './steps-batch';

/** A statement that found its row changed under its snapshot runs again; this many times means a bug. */
const MAX_CLAIM_ROUNDS = 100;

const P = (name: string) => sql.placeholder(name);
/** The statement's now: the database's clock plus the injected skew (skew.ts). */
const NOW = sql`(extract(epoch from now())::float8 + ${P('skew')}::float8)`;

// The hot path's statements, each built once (connection.ts says why) and named: node-postgres prepares a
// named statement once per connection.
const LOAD_PROGRESS = prepare<{ runId: string }>(
  'waybill_progress',
  sql`SELECT ${progress.runId} AS "runId", ${progress.step},
  ${progress.stateJson} AS "stateJson", ${progress.updatedAt} AS "updatedAt", ${progress.executed}, ${progress.skipped},
  ${progress.awaited}, ${progress.saveMs} AS "saveMs", ${progress.committedCount} AS "committedCount"
  FROM ${progress} WHERE ${progress.runId} = ${P('runId')}`,
);

/** The progress upsert and its folded events are a function (functions/progress.ts): a commit writes the same. */
const SAVE_PROGRESS = prepare<{ request: string; skew: number }>(
  'waybill_save_progress',
  sql`SELECT waybill_save_progress(${P('request')}::jsonb, ${P('skew')}::float8)`,
);

const RENEW = prepare<{ key: string; token: string; lease: number; skew: number }>(
  'waybill_renew',
  sql`UPDATE ${claims} SET lease_expires_at = t.now + ${P('lease')}::float8, heartbeat_at = t.now
  FROM (SELECT ${NOW} AS now) t WHERE ${claims.idemKey} = ${P('key')} AND ${claims.token} = ${P('token')}`,
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

export function postgresSteps(c: PgConnection, options: BatchOptions): Omit<StepStore, 'dialect'> {
  const commitOne = perCall(commitBatch(c), options);
  const claimOne = perCall(claimBatch(c), options);
  /**
   * One event. A send retried after its answer was lost must not record it twice: a step's event looks for the
   * row its first send may have left (eventInsertOnce). A first send writes plainly, so an event recorded again
   * on purpose (a refused commit sent again) is recorded again.
   */
  const event = async (e: EventInput) => {
    let unknown = false;
    await withRetry(
      'event',
      () =>
        unknown && e.idemKey
          ? c.once(eventInsertOnce({ ...e, idemKey: e.idemKey }, c.now()), 'waybill_event_once')
          : c.once(eventInsert(e, c.now()), 'waybill_event'),
      {
        onTransient: (lost) => {
          unknown ||= mayHaveRun(lost);
        },
      },
    );
  };
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
      await retried('saveProgress', SAVE_PROGRESS, () => ({
        request: JSON.stringify(progressFields(w)),
        skew: c.skew(),
      }));
    },

    async claim(r) {
      for (let round = 1; round <= MAX_CLAIM_ROUNDS; round++) {
        const answer = await claimOne(r);
        if (answer.kind === 'fenced') throw LeaseLostError.runFenced(r.idemKey);
        const outcome = claimOutcome(answer);
        if (outcome) return ownRunOutcome(r, outcome);
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
     * loss (the request's mayHaveLanded, or a lost attempt of its batch), a missed delete is checked against
     * `committed`; our own earlier attempt's row means the commit succeeded (`landed`). Anything else is a
     * lost lease. The statement never writes a second result (the delete is token-fenced, the insert does
     * nothing on conflict), so a retry can at worst fail to recognise its own success, never double-commit.
     */
    async commit(r) {
      const result = await commitOne(r);
      if (result.inserted === 1) {
        const next = result.next && r.next ? claimOutcome(result.next) : null;
        return { next: next && ownRunNext(r.next!, next), runStatus: result.runStatus };
      }
      // Our earlier attempt's row: committed, but whether it claimed the next key is unknown, so the caller
      // claims it again with the same token.
      if (result.landed) return { next: null, runStatus: result.runStatus };
      const error = new LeaseLostError(
        r.idemKey,
        result.deleted === 1 || result.heldByUs ? 'the key was committed by someone else meanwhile' : undefined,
      );
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

/**
 * What waybill_claim decided, as claim() reports it; null for `retry` (the key changed under it: claim again) and,
 * in a commit's claim taken ahead, for `fenced` (not made: the step's own claim then refuses it, claim() above).
 */
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
    case 'fenced':
      return null;
  }
}

function claimRow(row: Omit<ClaimRow, 'orphaned'>, orphaned: boolean): ClaimRow {
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
