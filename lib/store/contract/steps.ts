/**
 * The checkpoint core's interface: the handful of methods `Checkpoint.runOnce` and a library loop call
 * (claim, commit, release, renew, progress, and the loop's run row). Each is one short transaction (or one
 * statement), so a process killed at any instant leaves the store either before or after it, never between.
 * Results and states cross as JSON text: the core serializes once, the store never parses on the hot path.
 */
import type { ClaimRow, CommittedRow, Dialect, Outcome, ProgressRow, RunStatus } from './rows';

/** Counter deltas folded into a progress write, so that skips never cost a transaction of their own. */
export interface ProgressWrite {
  runId: string;
  step: number;
  stateJson: string;
  executed: number;
  skipped: number;
  awaited: number;
  /** How long the writer's previous progress write took (ms), kept as the run's measured save cost. */
  saveMs?: number | null;
}

export interface ClaimRequest {
  idemKey: string;
  runId: string;
  /** Fresh random fencing token; only its holder can commit or renew. */
  token: string;
  workerId: string | null;
  step: number | null;
  attempt: number;
  leaseMs: number;
  /** How long a claim with no lease column (written by an outside client) lives after claimed_at. */
  claimTtlMs: number;
  /**
   * The run's execution this claim is for: the run's `attempts` when this worker took it (claimRun). Given, the
   * claim is made only while the run is still that execution's (owner workerId, attempts fence), and is
   * otherwise refused with LeaseLostError, nothing written: an execution that was rerun, taken over or handed
   * back claims no further step, even before it hears of it. A claim taken ahead in a commit is then not
   * made (the commit's `next` is null). Absent (the HTTP protocol, a library loop): no run-level fence.
   */
  fence?: number;
}

export type ClaimOutcome =
  | { kind: 'committed'; row: CommittedRow }
  | { kind: 'claimed'; attempt: number; leaseExpiresAt: number; tookOverFrom: ClaimRow | null }
  /** Someone else holds a live lease. msUntilExpiry is measured by the store's clock, not the caller's. */
  | { kind: 'held'; holder: ClaimRow; msUntilExpiry: number };

export interface CommitRequest {
  idemKey: string;
  token: string;
  runId: string;
  resultJson: string;
  step: number | null;
  fingerprint: string | null;
  workerId: string | null;
  durationMs: number;
  /** The step's input as recorded (bounded), stored beside the result; null or absent when not recorded. */
  inputJson?: string | null;
  /** The attempt committing: recorded on the `lease_lost` event if the commit is refused. */
  attempt?: number;
  /** Written in the commit transaction itself: one transaction per executed step, not two. */
  progress?: ProgressWrite;
  /**
   * The caller's next key, claimed in the same transaction once the commit has succeeded: a loop that knows
   * its next step pays one transaction (one disk flush) per executed step instead of two.
   */
  next?: ClaimRequest;
  /**
   * An earlier attempt of this same commit (same token, result and duration) failed without an answer and may
   * have landed. If the claim is gone, a committed row matching this request is that attempt's own, and the
   * commit succeeded; its next claim, if it asked for one, is then unknown (null).
   */
  mayHaveLanded?: boolean;
}

/** What a commit answers, decided in its own transaction. */
export interface CommitOutcome {
  /**
   * The `next` key's claim, as claim() would decide it. Null without `next`; when a lost reply left it unknown
   * (the caller claims again with the same token); or when the run is paused or cancelled: no step after this
   * one will run, so none is claimed ahead.
   */
  next: ClaimOutcome | null;
  /**
   * The run's status in its runs row, null when it has none (an outside client's run). Read in the commit's
   * transaction, so a loop learns of a pause or a cancel with the commit it makes anyway, at no round trip.
   */
  runStatus: RunStatus | null;
}

/** A library loop (a Checkpoint given a workflow) declares its run as it starts. */
export interface LoopRunStart {
  runId: string;
  workflow: string;
  totalSteps: number | null;
  /** The run's input as JSON, shown on its page; 'null' when the loop gives none. */
  inputJson: string;
  /** The loop's worker id, shown as the run's owner. */
  owner: string | null;
}

/** How a library loop's run ends: its steps are done, it failed, or it stopped for a pause or a cancel. */
export interface LoopRunEnd {
  runId: string;
  owner: string | null;
  outcome: 'completed' | 'failed' | 'stopped';
  error?: string | null;
  outputJson?: string | null;
}

export interface ReleaseRequest {
  idemKey: string;
  token: string;
  runId: string;
  step: number | null;
  workerId: string | null;
  durationMs: number;
  /** Why the side effect failed, recorded as a `failed` event; null for a claim taken ahead and never used. */
  error: string | null;
  /** The attempt that failed, of how many its policy allows, and when the next is due (epoch s; null: no retry). */
  attempt?: number | null;
  maxAttempts?: number | null;
  retryAt?: number | null;
}

export interface StepStore {
  readonly dialect: Dialect;

  /** The run's position, or null when nothing was saved yet. */
  loadProgress(runId: string): Promise<ProgressRow | null>;

  /** Upserts the run's position and adds the counter deltas; one transaction. */
  saveProgress(write: ProgressWrite): Promise<void>;

  /**
   * Phase 1 of the protocol, in one transaction: the committed result if the key is committed; otherwise a
   * new claim, or a takeover of a claim whose lease passed (recording an `expired` event); otherwise the
   * live holder. A released claim does not exist, so it is simply claimed again.
   */
  claim(request: ClaimRequest): Promise<ClaimOutcome>;

  /** Extends the lease while the side effect runs. False when the claim is no longer ours (fenced). */
  renewClaim(idemKey: string, token: string, leaseMs: number): Promise<boolean>;

  /**
   * Phase 3, one transaction: delete the claim where the token is ours, insert the result, and write the
   * progress if given. Throws LeaseLostError when the claim is gone or held by another token, or when the
   * key was committed meanwhile (an operator resolved it): the transaction rolls back, and only a
   * `lease_lost` event is recorded, after it, so the timeline shows the refused commit.
   *
   * With `next`, answers that key's claim outcome, decided in the commit's transaction exactly as claim()
   * would. Null without `next`, or when a lost connection left it unknown whether the claim was made: the
   * caller then claims with the same token, which the store recognises as its own. With it, the run's status.
   */
  commit(request: CommitRequest): Promise<CommitOutcome>;

  /** The side effect failed (or a claim taken ahead went unused): delete our claim, token-checked, and record a `failed` event when there is an error. */
  releaseClaim(request: ReleaseRequest): Promise<void>;

  /** One committed row, or null. */
  getCommitted(idemKey: string): Promise<CommittedRow | null>;

  /** Appends an event (an operator's note, a refused key reuse) to a run's timeline. */
  recordEvent(event: {
    runId: string;
    outcome: Outcome;
    idemKey?: string | null;
    step?: number | null;
    workerId?: string | null;
    detail?: string | null;
  }): Promise<void>;

  /**
   * A library loop's run starts (or restarts), in one transaction: created `running` when it has no row;
   * set `running` again (attempts + 1) when queued, running, failed or completed; left alone when paused or
   * cancelled, whose status is answered so the loop does not start. ConflictError when the row is another
   * workflow's, or a worker holds it under a live run lease. The loop's only write before its steps.
   */
  beginLoopRun(request: LoopRunStart): Promise<{ status: RunStatus; created: boolean }>;

  /**
   * A library loop's run ends: `completed` (also when paused during its last step: its work is done) or
   * `failed` where it is still this owner's; `stopped` (it saw a pause or cancel) gives up ownership only.
   * Returns the status the run is left in, null when it has no row.
   */
  endLoopRun(request: LoopRunEnd): Promise<RunStatus | null>;
}
