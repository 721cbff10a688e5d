/**
 * Group commit on SQLite: the claims, commits and releases that runs in this process have ready at the same
 * moment go to the file as ONE `BEGIN IMMEDIATE` transaction, so they share one WAL flush (FULL's fsync)
 * instead of paying one each. The queue that gathers them is lib/store/shared/group-commit.ts; this file writes one
 * batch.
 *
 * Each request runs with the very logic a lone request runs (steps.ts, StepWrites). A batch is first written
 * as it is; if any request in it throws, that transaction is rolled back whole and the batch written again
 * with each request inside its own SAVEPOINT, so a request refused (a commit whose claim is gone or fenced,
 * a key committed meanwhile) rolls back only its own writes and rejects only its own caller; its `lease_lost`
 * event is written after that rollback, in the batch's transaction, as a lone commit writes it after its own.
 * The second pass decides every request afresh, in a transaction of its own, as of the same moment: the
 * first left nothing behind.
 *
 * The batch's answers are given only once its COMMIT has returned, so a claim is durable before its side
 * effect starts and a commit before runOnce resolves, exactly as alone. If the batch itself fails
 * (SQLITE_BUSY past the busy timeout on BEGIN, an I/O error on COMMIT), nothing in it was written and every
 * caller gets the error a lone request would have had.
 */
import { LeaseLostError } from '../../errors';
import type {
  ClaimOutcome,
  ClaimRequest,
  CommitOutcome,
  CommitRequest,
  ProgressWrite,
  ReleaseRequest,
} from '../contract';
import { groupCommit, type Settled } from '../shared/group-commit';
import { guard, type SqliteConnection } from './connection';

/**
 * The step protocol's writes, each run inside a transaction its caller holds: one request's logic, written
 * once, whether the transaction is that request's alone (steps.ts) or a group commit's (steps-batch.ts).
 */
export interface StepWrites {
  /** Phase 1: claim() on its own, or commit() for the next key. Throws KeyOfAnotherRunError before writing. */
  claimIn(r: ClaimRequest, now: number): ClaimOutcome;
  /** Phase 3. Throws LeaseLostError when the claim is not ours or the key is taken: the caller rolls back. */
  commitIn(r: CommitRequest, now: number): CommitOutcome;
  /** The `lease_lost` event of a refused commit, written after its rollback. */
  leaseLostIn(r: CommitRequest, error: LeaseLostError, now: number): void;
  releaseIn(r: ReleaseRequest, now: number): void;
  progressIn(w: ProgressWrite, now: number): void;
}

/** What the batches have done since the store opened: how much company the requests found. */
export interface BatchCounts {
  batches: number;
  requests: number;
}

export interface SqliteStepBatches {
  claim(request: ClaimRequest): Promise<ClaimOutcome>;
  commit(request: CommitRequest): Promise<CommitOutcome>;
  releaseClaim(request: ReleaseRequest): Promise<void>;
  /**
   * Any other write that is ready now rides in the next batch instead of paying a flush of its own: each run's
   * lease renewal was a flush of its own beside the batches. `write` gets
   * the batch's clock, read once the write lock is held.
   */
  inBatch<T>(write: (now: number) => T): Promise<T>;
  readonly counts: BatchCounts;
}

/** One queue for every kind, so what is ready in one turn is one transaction whatever it asks. */
type StepRequest =
  | { kind: 'claim'; request: ClaimRequest }
  | { kind: 'commit'; request: CommitRequest }
  | { kind: 'release'; request: ReleaseRequest }
  | { kind: 'write'; write: (now: number) => unknown };

export function sqliteStepBatches(c: SqliteConnection, w: StepWrites): SqliteStepBatches {
  const counts: BatchCounts = { batches: 0, requests: 0 };
  // Called inside the batch's transaction, better-sqlite3's transaction function is a SAVEPOINT: RELEASE when
  // the request's writes succeed, ROLLBACK TO (then RELEASE) when it throws.
  const savepoint = c.db.transaction((fn: () => unknown) => fn());

  function writeOne(op: StepRequest, now: number): unknown {
    switch (op.kind) {
      case 'claim':
        return w.claimIn(op.request, now);
      case 'commit':
        return w.commitIn(op.request, now);
      case 'release':
        return w.releaseIn(op.request, now);
      case 'write':
        return op.write(now);
    }
  }

  /** Runs after a request's rollback; what a lone request records after its own. */
  function refused(op: StepRequest, error: unknown, now: number): void {
    if (op.kind === 'commit' && error instanceof LeaseLostError) w.leaseLostIn(op.request, error, now);
  }

  /**
   * The common case, every request accepted, written without savepoints: a savepoint per request costs about
   * a quarter of a step's CPU (bench/RESULTS.md, "Why the code is shaped so"). Null when a
   * request threw: the whole transaction was rolled back, and the batch is to be written again with them.
   */
  function writeOptimistically(ops: StepRequest[]): Settled<unknown>[] | null {
    let refusedOne = false;
    try {
      return c.tx(() => {
        const now = c.now();
        return ops.map((op): Settled<unknown> => {
          try {
            return { ok: true, value: writeOne(op, now) };
          } catch (error) {
            refusedOne = true;
            throw error;
          }
        });
      });
    } catch (error) {
      // BEGIN or COMMIT failed (SQLITE_BUSY past the busy timeout, an I/O error): the batch fails as one.
      if (!refusedOne) throw error;
      return null;
    }
  }

  /** Each request in its own savepoint: one refused rolls back only its own writes. */
  function writeGuarded(ops: StepRequest[]): Settled<unknown>[] {
    return c.tx(() => {
      const now = c.now();
      return ops.map((op): Settled<unknown> => {
        try {
          return { ok: true, value: guard(() => savepoint(() => writeOne(op, now))) };
        } catch (error) {
          // An error SQLite answers by rolling the whole transaction back (a full disk, an I/O error) leaves
          // no batch to keep: the neighbours' writes are gone too, so the batch fails as one.
          if (!c.db.inTransaction) throw error;
          try {
            savepoint(() => refused(op, error, now));
          } catch (recording) {
            if (!c.db.inTransaction) throw recording;
            // As alone: a refusal whose event could not be written answers that error instead.
            return { ok: false, error: recording };
          }
          return { ok: false, error };
        }
      });
    });
  }

  async function writeBatch(ops: StepRequest[]): Promise<Settled<unknown>[]> {
    // Each pass reads the clock once it holds the write lock: BEGIN IMMEDIATE may have waited up to two thirds
    // of a lease, and a claim dated from before that wait would be granted with its lease nearly gone.
    const settled = writeOptimistically(ops) ?? writeGuarded(ops);
    counts.batches += 1;
    counts.requests += ops.length;
    return settled;
  }

  const send = groupCommit(writeBatch);
  return {
    claim: (request) => send({ kind: 'claim', request }) as Promise<ClaimOutcome>,
    commit: (request) => send({ kind: 'commit', request }) as Promise<CommitOutcome>,
    releaseClaim: async (request) => {
      await send({ kind: 'release', request });
    },
    inBatch: <T>(write: (now: number) => T) => send({ kind: 'write', write }) as Promise<T>,
    counts,
  };
}
