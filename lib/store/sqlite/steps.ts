/**
 * The step protocol on SQLite: progress, claim, renew, commit, release, and a library loop's run row. The hot
 * path binds prepared statements positionally: named parameters and spreads with extra keys cost
 * microseconds a call on Node 20, a visible share of a step at NORMAL, and a query builder's per-call work
 * would cost more. So these statements stay hand-written, each next to the code that binds its values.
 */
import type Database from 'better-sqlite3';
import { claimExpiresAt } from '../../domain/claim-expiry';
import { LeaseLostError } from '../../errors';
import { COMMITTED_FIELDS, committedColumns, PRIOR_STATE_MAX_CHARS } from '../columns';
import { ownRunNext, ownRunOutcome } from '../key-owner';
import type {
  ClaimOutcome,
  ClaimRequest,
  ClaimRow,
  CommitOutcome,
  CommitRequest,
  CommittedRow,
  ProgressRow,
  ProgressWrite,
  ReleaseRequest,
  RunStatus,
  StepStore,
} from '../types';
import { guard, type SqliteConnection } from './connection';
import { beginLoopRunIn, endLoopRunIn } from './loop-runs';
import { sqliteStepBatches, type StepWrites } from './steps-batch';

/** A claims row as read, before `orphaned` is decided by the caller's clock. */
export type RawClaim = Omit<ClaimRow, 'orphaned'>;

export const CLAIM_SELECT = `SELECT idem_key AS idemKey, run_id AS runId, claimed_at AS claimedAt, token, worker_id AS workerId,
  lease_expires_at AS leaseExpiresAt, heartbeat_at AS heartbeatAt, step, attempt FROM claims`;

/** One result, never replaced: ON CONFLICT DO NOTHING, and the caller checks `changes`. */
export const INSERT_COMMITTED = `INSERT INTO committed (${COMMITTED_FIELDS.join(', ')})
  VALUES (${COMMITTED_FIELDS.map(() => '?').join(', ')}) ON CONFLICT (idem_key) DO NOTHING`;

/**
 * A step's own result, with the run's progress as it stood before this commit (committed.prior_*): step 0 and
 * `{}` when the run has none yet, nothing when its state is longer than PRIOR_STATE_MAX_CHARS. SQLite's
 * length() counts characters, as PostgreSQL's does in waybill_commit, so both stores copy the same states.
 * The last parameter is the run id again, for the join. (`WHERE true`: an upsert's INSERT … SELECT needs a
 * WHERE clause, or SQLite reads ON CONFLICT as the join's ON.)
 */
const COMMIT_WITH_PRIOR = `INSERT INTO committed (${COMMITTED_FIELDS.join(', ')})
  SELECT ${COMMITTED_FIELDS.slice(0, -2)
    .map(() => '?')
    .join(', ')},
    CASE WHEN p.run_id IS NULL THEN 0 WHEN length(p.state_json) <= ${PRIOR_STATE_MAX_CHARS} THEN p.step END,
    CASE WHEN p.run_id IS NULL THEN '{}' WHEN length(p.state_json) <= ${PRIOR_STATE_MAX_CHARS} THEN p.state_json END
  FROM (SELECT ? AS run_id) AS r LEFT JOIN progress AS p ON p.run_id = r.run_id WHERE true
  ON CONFLICT (idem_key) DO NOTHING`;

/** When a claim stops protecting its key: the one rule, lib/domain/claim-expiry. */
export const expiresAt = claimExpiresAt;

export function sqliteStepWrites(c: SqliteConnection): StepWrites & { statements: StepStatements } {
  const s = stepStatements(c);
  const runStatusOf = (runId: string): RunStatus | null => s.runStatus.get(runId)?.status ?? null;

  function progressIn(w: ProgressWrite, now: number): void {
    s.upsertProgress.run(w.runId, w.step, w.stateJson, now, w.executed, w.skipped, w.awaited, w.saveMs ?? null);
    if (w.skipped > 0) c.event({ runId: w.runId, step: w.step, outcome: 'skipped', count: w.skipped }, now);
    if (w.awaited > 0) c.event({ runId: w.runId, step: w.step, outcome: 'awaited', count: w.awaited }, now);
  }

  // Another run's key writes nothing: its committed row returns before the insert, and its live claim
  // made the insert a no-op.
  const claimIn = (r: ClaimRequest, now: number): ClaimOutcome => ownRunOutcome(r, decideClaimIn(r, now));

  /** Whether the run is no longer the claiming execution's (ClaimRequest.fence). */
  const fencedOut = (r: ClaimRequest): boolean =>
    r.fence !== undefined && s.runExecution.get(r.runId, r.workerId, r.fence) === undefined;

  function decideClaimIn(r: ClaimRequest, now: number): ClaimOutcome {
    if (fencedOut(r)) throw LeaseLostError.runFenced(r.idemKey);
    const done = s.committed.get(r.idemKey);
    if (done) return { kind: 'committed', row: done };
    const leaseExpiresAt = now + r.leaseMs / 1000;
    // Inserted first, read only if the key is held: the common case costs no lookup of a claim that is not there.
    const inserted = s.insertClaim.run(
      r.idemKey,
      r.runId,
      now,
      r.token,
      r.workerId,
      leaseExpiresAt,
      now,
      r.step,
      r.attempt,
    );
    if (inserted.changes === 1) return { kind: 'claimed', attempt: r.attempt, leaseExpiresAt, tookOverFrom: null };
    const held = s.claim.get(r.idemKey) as RawClaim;
    if (held.token === r.token) {
      // Our own claim, taken ahead by the previous step's commit.
      s.renew.run({ idemKey: r.idemKey, token: r.token, now, leaseExpiresAt });
      return { kind: 'claimed', attempt: held.attempt, leaseExpiresAt, tookOverFrom: null };
    }
    const expiry = expiresAt(held, r.claimTtlMs);
    const holder: ClaimRow = { ...held, orphaned: expiry <= now };
    if (!holder.orphaned) return { kind: 'held', holder, msUntilExpiry: (expiry - now) * 1000 };
    const attempt = Math.max(r.attempt, held.attempt + 1);
    s.takeOver.run(r.runId, now, r.token, r.workerId, leaseExpiresAt, now, r.step, attempt, r.idemKey);
    c.event(
      {
        runId: held.runId,
        idemKey: r.idemKey,
        step: held.step,
        outcome: 'expired',
        workerId: r.workerId,
        detail: `lease of ${held.workerId ?? 'an outside client'} passed; taken over`,
        attempt,
        previousWorkerId: held.workerId,
        previousAttempt: held.attempt,
      },
      now,
    );
    return { kind: 'claimed', attempt, leaseExpiresAt, tookOverFrom: holder };
  }

  /**
   * Whether this commit's row is in the table: the same worker, run, step, fingerprint, result and duration
   * (measured to a fraction of a microsecond, so no other call's). A failed SQLite transaction rolls back, so
   * this only answers true to a caller that retries a commit whose answer it never got.
   */
  const landed = (r: CommitRequest): boolean =>
    s.landed.get(r.idemKey, r.runId, r.resultJson, r.step, r.fingerprint, r.workerId, r.durationMs) !== undefined;

  function commitIn(r: CommitRequest, now: number): CommitOutcome {
    if (s.deleteOwnClaim.run(r.idemKey, r.token).changes === 0) {
      if (r.mayHaveLanded && landed(r)) return { next: null, runStatus: runStatusOf(r.runId) };
      throw new LeaseLostError(r.idemKey);
    }
    // The map as it stood when this step was reached is copied beside the result in the same statement, for a
    // rerun from here: no read of the state into JavaScript and back (see COMMIT_WITH_PRIOR).
    const inserted = s.insertCommitted.run(
      r.idemKey,
      r.runId,
      r.resultJson,
      now,
      r.step,
      r.fingerprint,
      r.workerId,
      r.durationMs,
      'executed',
      r.inputJson ?? null,
      r.runId,
    );
    if (inserted.changes === 0) {
      throw new LeaseLostError(r.idemKey, 'the key was committed by someone else meanwhile');
    }
    if (r.progress) progressIn(r.progress, now);
    const runStatus = runStatusOf(r.runId);
    // A paused or cancelled run runs no step after this one: its next key is not claimed ahead.
    const stopped = runStatus === 'paused' || runStatus === 'cancelled';
    return {
      next: r.next && !stopped && !fencedOut(r.next) ? ownRunNext(r.next, decideClaimIn(r.next, now)) : null,
      runStatus,
    };
  }

  function leaseLostIn(r: CommitRequest, error: LeaseLostError, now: number): void {
    c.event(
      {
        runId: r.runId,
        idemKey: r.idemKey,
        step: r.step,
        outcome: 'lease_lost',
        workerId: r.workerId,
        durationMs: r.durationMs,
        detail: error.message,
        attempt: r.attempt ?? null,
      },
      now,
    );
  }

  function releaseIn(r: ReleaseRequest, now: number): void {
    s.deleteOwnClaim.run(r.idemKey, r.token);
    if (r.error === null) return;
    c.event(
      {
        runId: r.runId,
        idemKey: r.idemKey,
        step: r.step,
        outcome: 'failed',
        workerId: r.workerId,
        durationMs: r.durationMs,
        detail: r.error,
        attempt: r.attempt ?? null,
        maxAttempts: r.maxAttempts ?? null,
        retryAt: r.retryAt ?? null,
      },
      now,
    );
  }

  return { statements: s, claimIn, commitIn, leaseLostIn, releaseIn, progressIn };
}

/** Written out, not inferred: the package's declarations must name better-sqlite3's Statement through an import. */
interface StepStatements {
  progress: Database.Statement<[string], ProgressRow>;
  upsertProgress: Database.Statement;
  committed: Database.Statement<[string], CommittedRow>;
  claim: Database.Statement<[string], RawClaim>;
  insertClaim: Database.Statement;
  takeOver: Database.Statement;
  renew: Database.Statement;
  deleteOwnClaim: Database.Statement;
  insertCommitted: Database.Statement;
  runStatus: Database.Statement<[string], { status: RunStatus }>;
  runExecution: Database.Statement<[string, string | null, number], { x: number }>;
  landed: Database.Statement;
}

function stepStatements(c: SqliteConnection): StepStatements {
  const { db } = c;
  return {
    progress: db.prepare<[string], ProgressRow>(`SELECT run_id AS runId, step, state_json AS stateJson,
      updated_at AS updatedAt, executed, skipped, awaited, save_ms AS saveMs FROM progress WHERE run_id = ?`),
    upsertProgress:
      db.prepare(`INSERT INTO progress (run_id, step, state_json, updated_at, executed, skipped, awaited, save_ms)
      VALUES (?, ?, ?, ?, ?, ?, ?, ?)
      ON CONFLICT (run_id) DO UPDATE SET step = excluded.step, state_json = excluded.state_json,
        updated_at = excluded.updated_at, executed = executed + excluded.executed,
        skipped = skipped + excluded.skipped, awaited = awaited + excluded.awaited,
        save_ms = coalesce(excluded.save_ms, save_ms)`),
    committed: db.prepare<[string], CommittedRow>(
      `SELECT ${committedColumns('sqlite')} FROM committed WHERE idem_key = ?`,
    ),
    claim: db.prepare<[string], RawClaim>(`${CLAIM_SELECT} WHERE idem_key = ?`),
    insertClaim: db.prepare(`INSERT INTO claims (idem_key, run_id, claimed_at, token, worker_id,
      lease_expires_at, heartbeat_at, step, attempt)
      VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (idem_key) DO NOTHING`),
    takeOver: db.prepare(`UPDATE claims SET run_id = ?, claimed_at = ?, token = ?, worker_id = ?,
      lease_expires_at = ?, heartbeat_at = ?, step = ?, attempt = ? WHERE idem_key = ?`),
    renew: db.prepare(`UPDATE claims SET lease_expires_at = @leaseExpiresAt, heartbeat_at = @now
      WHERE idem_key = @idemKey AND token = @token`),
    deleteOwnClaim: db.prepare('DELETE FROM claims WHERE idem_key = ? AND token = ?'),
    insertCommitted: db.prepare(COMMIT_WITH_PRIOR),
    runStatus: db.prepare<[string], { status: RunStatus }>('SELECT status FROM runs WHERE id = ?'),
    runExecution: db.prepare<[string, string | null, number], { x: number }>(
      'SELECT 1 AS x FROM runs WHERE id = ? AND owner = ? AND attempts = ?',
    ),
    landed: db.prepare(`SELECT 1 FROM committed WHERE idem_key = ? AND source = 'executed' AND run_id = ?
      AND result_json = ? AND step IS ? AND fingerprint IS ? AND worker_id IS ? AND duration_ms = ?`),
  };
}

export interface SqliteStepsOptions {
  /**
   * Claims, commits and releases ready at the same moment share one transaction (steps-batch.ts): one disk
   * flush for many runs. On by default; off, each is a transaction of its own.
   */
  groupCommit?: boolean;
}

/** A write that joins the next group commit (steps-batch.ts), given the batch's clock. */
export type InBatch = <T>(write: (now: number) => T) => Promise<T>;

/** How many write transactions the store committed, and how many requests its group commits carried. */
export interface WriteCounts {
  transactions: number;
  /** Batches written by group commit, and the claims, commits and releases they held. Zero when it is off. */
  batches: number;
  batchedRequests: number;
}

export function sqliteSteps(
  c: SqliteConnection,
  options: SqliteStepsOptions = {},
): Omit<StepStore, 'dialect'> & { writeCounts(): WriteCounts; inBatch: InBatch | null } {
  const w = sqliteStepWrites(c);
  const s = w.statements;
  const batched = options.groupCommit === false ? null : sqliteStepBatches(c, w);

  return {
    inBatch: batched?.inBatch ?? null,
    writeCounts: () => ({
      transactions: c.committed.transactions,
      batches: batched?.counts.batches ?? 0,
      batchedRequests: batched?.counts.requests ?? 0,
    }),

    async loadProgress(runId) {
      return guard(() => s.progress.get(runId) ?? null);
    },

    async saveProgress(write) {
      c.tx(() => w.progressIn(write, c.now()));
    },

    claim:
      batched?.claim ??
      (async (r) => {
        // The clock is read once the write lock is held: BEGIN IMMEDIATE may have waited for it.
        return c.tx(() => w.claimIn(r, c.now()));
      }),

    async renewClaim(idemKey, token, leaseMs) {
      const now = c.now();
      return guard(() => s.renew.run({ idemKey, token, now, leaseExpiresAt: now + leaseMs / 1000 }).changes === 1);
    },

    commit:
      batched?.commit ??
      (async (r): Promise<CommitOutcome> => {
        try {
          return c.tx(() => w.commitIn(r, c.now()));
        } catch (error) {
          // After the rollback, in a transaction of its own: the timeline shows the refused commit.
          if (error instanceof LeaseLostError) w.leaseLostIn(r, error, c.now());
          throw error;
        }
      }),

    releaseClaim:
      batched?.releaseClaim ??
      (async (r) => {
        c.tx(() => w.releaseIn(r, c.now()));
      }),

    async getCommitted(idemKey) {
      return guard(() => s.committed.get(idemKey) ?? null);
    },

    async recordEvent(e) {
      const now = c.now();
      guard(() =>
        c.event(
          {
            ...e,
            idemKey: e.idemKey ?? null,
            step: e.step ?? null,
            workerId: e.workerId ?? null,
            detail: e.detail ?? null,
          },
          now,
        ),
      );
    },

    async beginLoopRun(r) {
      const now = c.now();
      return c.tx(() => beginLoopRunIn(c, r, now));
    },

    async endLoopRun(r) {
      const now = c.now();
      return c.tx(() => endLoopRunIn(c, r, now));
    },
  };
}
