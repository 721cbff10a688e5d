/**
 * The one interface every backend implements. The checkpoint core talks only to this; the SQLite and
 * PostgreSQL files are two answers to it. Each method is one short transaction (or one statement), so a
 * process killed at any instant leaves the store either before or after it, never between.
 *
 * Times crossing this interface are epoch seconds, as in the tables. Durations are milliseconds.
 * Results and states cross as JSON text: the core serializes once, the store never parses on the hot path.
 */

export type Outcome = 'executed' | 'skipped' | 'awaited' | 'failed' | 'expired' | 'resolved' | 'lease_lost' | 'operator';

export interface ProgressRow {
  runId: string;
  step: number;
  stateJson: string;
  updatedAt: number;
  executed: number;
  skipped: number;
  awaited: number;
}

export interface CommittedRow {
  idemKey: string;
  runId: string;
  resultJson: string;
  committedAt: number;
  step: number | null;
  fingerprint: string | null;
  workerId: string | null;
  durationMs: number | null;
  source: 'executed' | 'manual';
}

export interface ClaimRow {
  idemKey: string;
  runId: string;
  claimedAt: number;
  token: string | null;
  workerId: string | null;
  leaseExpiresAt: number | null;
  heartbeatAt: number | null;
  step: number | null;
  attempt: number;
  /** The lease has passed by the store's clock: whether the side effect happened is unknown. */
  orphaned: boolean;
}

/** Counter deltas folded into a progress write, so that skips never cost a transaction of their own. */
export interface ProgressWrite {
  runId: string;
  step: number;
  stateJson: string;
  executed: number;
  skipped: number;
  awaited: number;
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
  /** Written in the commit transaction itself: one transaction per executed step, not two. */
  progress?: ProgressWrite;
}

export interface ReleaseRequest {
  idemKey: string;
  token: string;
  runId: string;
  step: number | null;
  workerId: string | null;
  durationMs: number;
  error: string;
}

export interface ResolveRequest {
  idemKey: string;
  resultJson: string;
  /** Who resolved it and why, recorded in the run's timeline. */
  actor: string;
  note?: string;
}

export interface Store {
  readonly dialect: 'sqlite' | 'postgres';

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
   * progress if given. Throws LeaseLostError, writing nothing, when the claim is gone or held by another
   * token, or when the key was committed meanwhile (an operator resolved it).
   */
  commit(request: CommitRequest): Promise<void>;

  /** The side effect failed: delete our claim (token-checked) and record a `failed` event. */
  releaseClaim(request: ReleaseRequest): Promise<void>;

  /** One committed row, or null. */
  getCommitted(idemKey: string): Promise<CommittedRow | null>;

  /** Committed rows of a run in step order, then key order. */
  listCommitted(runId: string, options?: { limit?: number; afterKey?: string }): Promise<CommittedRow[]>;

  /** Claims, optionally of one run or only the orphaned ones (lease passed by the store's clock). */
  listClaims(options?: { runId?: string; orphanedOnly?: boolean; claimTtlMs: number }): Promise<ClaimRow[]>;

  /**
   * An operator gives up on a claim: the row is deleted, so any client can claim the key again, and an
   * `expired` event is recorded. Only an orphaned claim is expired unless `force` is set. False when
   * there was nothing to expire.
   */
  expireClaim(idemKey: string, options: { actor: string; force?: boolean; claimTtlMs: number }): Promise<boolean>;

  /**
   * An operator commits a result by hand (`source = manual`) for a claim whose side effect is in doubt,
   * deleting the claim and recording a `resolved` event. The claim's holder can no longer commit (its
   * token is gone). NotFoundError when there is no claim on the key.
   */
  resolveClaim(request: ResolveRequest): Promise<void>;

  /** Append-only history of a run, oldest first. */
  listEvents(runId: string, options?: { limit?: number; afterId?: number }): Promise<StepEvent[]>;

  /** Releases connections; the store is unusable afterwards. */
  close(): Promise<void>;
}

export interface StepEvent {
  id: number;
  runId: string;
  idemKey: string | null;
  step: number | null;
  outcome: Outcome;
  count: number;
  durationMs: number | null;
  workerId: string | null;
  detail: string | null;
  at: number;
}
