/**
 * The step protocol on SQLite: progress, claim, renew, commit, release, and a library loop's run row. The hot
 * path's statements are hand-written, each with the values it names (statement.ts): a query builder's
 * per-call work would cost a visible share of a step at NORMAL, and so would spreads with extra keys on
 * Node 20, so each call passes an object literal of exactly the statement's names.
 */
import { claimExpiresAt } from '../../domain/claim-expiry';
import { LeaseLostError } from '../../errors';
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
} from '../contract';
import { committed } from '../schema/sqlite';
import { expiredByDeathText, takeoverDetail } from '../shared/claim-expiry-sql';
import { columnNames, PRIOR_STATE_MAX_CHARS } from '../shared/columns';
import { ownRunNext, ownRunOutcome } from '../shared/key-owner';
import { CLAIM, COMMITTED, PROGRESS } from './columns';
import { guard, type SqliteConnection } from './connection';
import { beginLoopRunIn, endLoopRunIn } from './loop-runs';
import { freshRows } from './settle';
import { type Prepared, prepareAll, statement } from './statement';
import { type StepWrites, sqliteStepBatches } from './steps-batch';

/** A claims row as read, before `orphaned` is decided by the caller's clock. */
export type RawClaim = Omit<ClaimRow, 'orphaned'>;

export const claimByKey = statement<{ idemKey: string }, RawClaim>(
  `SELECT ${CLAIM} FROM claims WHERE idem_key = @idemKey`,
);

/** A committed row's values as an insert names them. */
type CommittedValues = Omit<CommittedRow, 'forkedFrom' | 'priorStep' | 'priorStateJson'>;

/** The committed columns a commit writes from its values (the prior ones it copies, the fork link it leaves). */
const WRITTEN = [
  'idemKey',
  'runId',
  'resultJson',
  'committedAt',
  'step',
  'fingerprint',
  'workerId',
  'durationMs',
  'source',
  'inputJson',
] as const satisfies readonly (keyof CommittedValues)[];
const WRITTEN_VALUES = WRITTEN.map((key) => `@${key}`).join(', ');

/** One result, never replaced: ON CONFLICT DO NOTHING, and the caller checks `changes`. */
export const insertCommitted = statement<CommittedValues>(`INSERT INTO committed (${columnNames(committed, WRITTEN)})
  VALUES (${WRITTEN_VALUES}) ON CONFLICT (idem_key) DO NOTHING`);

/** The run's progress `column` as the commit's row copies it: null when the state is too long, or no row. */
const prior = (column: 'step' | 'state_json') =>
  `(SELECT CASE WHEN length(state_json) <= ${PRIOR_STATE_MAX_CHARS} THEN ${column} END FROM progress WHERE run_id = @runId)`;
const NO_PROGRESS = 'NOT EXISTS (SELECT 1 FROM progress WHERE run_id = @runId)';

/**
 * A step's own result, with the run's progress as it stood before this commit (committed.prior_*): step 0 and
 * `{}` when the run has none yet, nothing when its state is longer than PRIOR_STATE_MAX_CHARS. SQLite's
 * length() counts characters, as PostgreSQL's does in waybill_commit, so both stores copy the same states.
 * The copy is read by subqueries in VALUES, not by an INSERT … SELECT joined to progress: committed's insert
 * triggers write progress, so SQLite would first copy such a SELECT's row into a temporary table, every commit.
 * The row goes in fresh: committed_fresh until the next settle (committed-rows.ts).
 */
const commitWithPrior = statement<CommittedValues>(`INSERT INTO committed
    (${columnNames(committed, [...WRITTEN, 'priorStep', 'priorStateJson'])}, fresh)
  VALUES (${WRITTEN_VALUES},
    coalesce(${prior('step')}, CASE WHEN ${NO_PROGRESS} THEN 0 END),
    coalesce(${prior('state_json')}, CASE WHEN ${NO_PROGRESS} THEN '{}' END),
    1)
  ON CONFLICT (idem_key) DO NOTHING`);

/** When a claim stops protecting its key: the one rule, lib/domain/claim-expiry. */
export const expiresAt = claimExpiresAt;

export function sqliteStepWrites(c: SqliteConnection): StepWrites & { statements: StepStatements } {
  const s = stepStatements(c);
  const fresh = freshRows(c);
  const runStatusOf = (runId: string): RunStatus | null => s.runStatus.get({ runId })?.status ?? null;

  /** `counted`: 1 when a commit's own row rides with this write (migration 0034: its insert is not counted). */
  function progressIn(w: ProgressWrite, now: number, counted: 0 | 1 = 0): void {
    s.upsertProgress.run({
      runId: w.runId,
      step: w.step,
      stateJson: w.stateJson,
      now,
      executed: w.executed,
      skipped: w.skipped,
      awaited: w.awaited,
      saveMs: w.saveMs ?? null,
      counted,
    });
    if (w.skipped > 0) c.event({ runId: w.runId, step: w.step, outcome: 'skipped', count: w.skipped }, now);
    if (w.awaited > 0) c.event({ runId: w.runId, step: w.step, outcome: 'awaited', count: w.awaited }, now);
  }

  // Another run's key writes nothing: its committed row returns before the insert, and its live claim
  // made the insert a no-op.
  const claimIn = (r: ClaimRequest, now: number): ClaimOutcome => ownRunOutcome(r, decideClaimIn(r, now));

  /** Whether the run is no longer the claiming execution's (ClaimRequest.fence). */
  const fencedOut = (r: ClaimRequest): boolean =>
    r.fence !== undefined && s.runExecution.get({ runId: r.runId, workerId: r.workerId, fence: r.fence }) === undefined;

  function decideClaimIn(r: ClaimRequest, now: number): ClaimOutcome {
    if (fencedOut(r)) throw LeaseLostError.runFenced(r.idemKey);
    const done = s.committed.get({ idemKey: r.idemKey });
    if (done) return { kind: 'committed', row: done };
    const leaseExpiresAt = now + r.leaseMs / 1000;
    // Inserted first, read only if the key is held: the common case costs no lookup of a claim that is not there.
    const inserted = s.insertClaim.run({
      idemKey: r.idemKey,
      runId: r.runId,
      now,
      token: r.token,
      workerId: r.workerId,
      leaseExpiresAt,
      step: r.step,
      attempt: r.attempt,
    });
    if (inserted.changes === 1) return { kind: 'claimed', attempt: r.attempt, leaseExpiresAt, tookOverFrom: null };
    const held = s.claim.get({ idemKey: r.idemKey }) as RawClaim;
    if (held.token === r.token) {
      // Our own claim, taken ahead by the previous step's commit.
      s.renew.run({ idemKey: r.idemKey, token: r.token, now, leaseExpiresAt });
      return { kind: 'claimed', attempt: held.attempt, leaseExpiresAt, tookOverFrom: null };
    }
    const expiry = expiresAt(held, r.claimTtlMs);
    const holder: ClaimRow = { ...held, orphaned: expiry <= now };
    if (!holder.orphaned) return { kind: 'held', holder, msUntilExpiry: (expiry - now) * 1000 };
    const attempt = Math.max(r.attempt, held.attempt + 1);
    s.takeOver.run({
      idemKey: r.idemKey,
      runId: r.runId,
      now,
      token: r.token,
      workerId: r.workerId,
      leaseExpiresAt,
      step: r.step,
      attempt,
    });
    c.event(
      {
        runId: held.runId,
        idemKey: r.idemKey,
        step: held.step,
        outcome: 'expired',
        workerId: r.workerId,
        detail: takeoverDetail(held.workerId, diedHolder(held)),
        attempt,
        previousWorkerId: held.workerId,
        previousAttempt: held.attempt,
      },
      now,
    );
    return { kind: 'claimed', attempt, leaseExpiresAt, tookOverFrom: holder };
  }

  /** Whether the claim taken over was expired by its worker's death, not by its lease passing. */
  const diedHolder = (held: RawClaim): boolean =>
    held.workerId !== null &&
    s.expiredByDeath.get({ idemKey: held.idemKey, workerId: held.workerId, attempt: held.attempt })?.died === 1;

  /**
   * Whether this commit's row is in the table: the same worker, run, step, fingerprint, result and duration
   * (measured to a fraction of a microsecond, so no other call's). A failed SQLite transaction rolls back, so
   * this only answers true to a caller that retries a commit whose answer it never got.
   */
  const landed = (r: CommitRequest): boolean =>
    s.landed.get({
      idemKey: r.idemKey,
      runId: r.runId,
      resultJson: r.resultJson,
      step: r.step,
      fingerprint: r.fingerprint,
      workerId: r.workerId,
      durationMs: r.durationMs,
    }) !== undefined;

  function commitIn(r: CommitRequest, now: number): CommitOutcome {
    if (s.deleteOwnClaim.run({ idemKey: r.idemKey, token: r.token }).changes === 0) {
      if (r.mayHaveLanded && landed(r)) return { next: null, runStatus: runStatusOf(r.runId) };
      throw new LeaseLostError(r.idemKey);
    }
    // The map as it stood when this step was reached is copied beside the result in the same statement, for a
    // rerun from here: no read of the state into JavaScript and back (see commitWithPrior).
    const inserted = s.insertCommitted.run({
      idemKey: r.idemKey,
      runId: r.runId,
      resultJson: r.resultJson,
      committedAt: now,
      step: r.step,
      fingerprint: r.fingerprint,
      workerId: r.workerId,
      durationMs: r.durationMs,
      source: 'executed',
      inputJson: r.inputJson ?? null,
    });
    if (inserted.changes === 0) {
      throw new LeaseLostError(r.idemKey, 'the key was committed by someone else meanwhile');
    }
    fresh.committed();
    if (r.progress) progressIn(r.progress, now, 1);
    else s.countCommit.run({ runId: r.runId });
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
    s.deleteOwnClaim.run({ idemKey: r.idemKey, token: r.token });
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

type ClaimValues = Pick<
  ClaimRow,
  'idemKey' | 'runId' | 'token' | 'workerId' | 'leaseExpiresAt' | 'step' | 'attempt'
> & {
  now: number;
};

const STEP_STATEMENTS = {
  progress: statement<{ runId: string }, ProgressRow>(`SELECT ${PROGRESS} FROM progress WHERE run_id = @runId`),
  // A new row is counted by its insert trigger (migration 0027), the commit's own row with the rest.
  upsertProgress: statement<
    Omit<ProgressRow, 'updatedAt' | 'committedCount'> & { now: number; counted: 0 | 1 }
  >(`INSERT INTO progress
      (run_id, step, state_json, updated_at, executed, skipped, awaited, save_ms)
    VALUES (@runId, @step, @stateJson, @now, @executed, @skipped, @awaited, @saveMs)
    ON CONFLICT (run_id) DO UPDATE SET step = excluded.step, state_json = excluded.state_json,
      updated_at = excluded.updated_at, executed = executed + excluded.executed,
      skipped = skipped + excluded.skipped, awaited = awaited + excluded.awaited,
      save_ms = coalesce(excluded.save_ms, save_ms), committed_count = committed_count + @counted`),
  /** A commit's own row counted when it writes no progress (migration 0034: its insert is not counted). */
  countCommit: statement<{ runId: string }>(
    'UPDATE progress SET committed_count = committed_count + 1 WHERE run_id = @runId',
  ),
  committed: statement<{ idemKey: string }, CommittedRow>(
    `SELECT ${COMMITTED} FROM committed WHERE idem_key = @idemKey`,
  ),
  claim: claimByKey,
  insertClaim: statement<ClaimValues>(`INSERT INTO claims (idem_key, run_id, claimed_at, token, worker_id,
      lease_expires_at, heartbeat_at, step, attempt)
    VALUES (@idemKey, @runId, @now, @token, @workerId, @leaseExpiresAt, @now, @step, @attempt)
    ON CONFLICT (idem_key) DO NOTHING`),
  takeOver: statement<ClaimValues>(`UPDATE claims SET run_id = @runId, claimed_at = @now, token = @token,
    worker_id = @workerId, lease_expires_at = @leaseExpiresAt, heartbeat_at = @now, step = @step, attempt = @attempt
    WHERE idem_key = @idemKey`),
  expiredByDeath: statement<{ idemKey: string; workerId: string; attempt: number }, { died: number }>(
    `SELECT ${expiredByDeathText('@idemKey', '@workerId', '@attempt')} AS died`,
  ),
  renew: statement<{ idemKey: string; token: string; now: number; leaseExpiresAt: number }>(`UPDATE claims
    SET lease_expires_at = @leaseExpiresAt, heartbeat_at = @now WHERE idem_key = @idemKey AND token = @token`),
  deleteOwnClaim: statement<{ idemKey: string; token: string }>(
    'DELETE FROM claims WHERE idem_key = @idemKey AND token = @token',
  ),
  insertCommitted: commitWithPrior,
  runStatus: statement<{ runId: string }, { status: RunStatus }>('SELECT status FROM runs WHERE id = @runId'),
  runExecution: statement<{ runId: string; workerId: string | null; fence: number }, { x: number }>(
    'SELECT 1 AS x FROM runs WHERE id = @runId AND owner = @workerId AND attempts = @fence',
  ),
  landed: statement<
    Pick<CommittedRow, 'idemKey' | 'runId' | 'resultJson' | 'step' | 'fingerprint' | 'workerId' | 'durationMs'>,
    { x: number }
  >(`SELECT 1 AS x FROM committed WHERE idem_key = @idemKey AND source = 'executed' AND run_id = @runId
    AND result_json = @resultJson AND step IS @step AND fingerprint IS @fingerprint AND worker_id IS @workerId
    AND duration_ms = @durationMs`),
};

type StepStatements = Prepared<typeof STEP_STATEMENTS>;

/** Prepared once per connection: the hot path binds them, never prepares. */
const stepStatements = (c: SqliteConnection): StepStatements => prepareAll(c.db, STEP_STATEMENTS);

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
      return guard(() => s.progress.get({ runId }) ?? null);
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
      return guard(() => s.committed.get({ idemKey }) ?? null);
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
