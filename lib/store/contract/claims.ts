/**
 * Claims, committed rows and the timeline, as the control plane reads them and as an operator resolves a
 * side effect in doubt.
 */
import type { ClaimRow, CommittedRow, StepEvent } from './rows';

export interface ResolveRequest {
  idemKey: string;
  resultJson: string;
  /** Who resolved it and why, recorded in the run's timeline. */
  actor: string;
  note?: string;
  /** For a claim with no lease column, which lives claim TTL after claimed_at, as expireClaim judges it. */
  claimTtlMs: number;
  /** Resolve a claim whose lease is live, as expireClaim's force does. */
  force?: boolean;
  /**
   * The attempt of the claim the operator saw. A claim taken over since has another attempt and is refused,
   * forced or not: the operator's result was decided about the previous holder's side effect.
   */
  attempt?: number;
}

export interface ClaimStore {
  /** How many keys a run has committed. */
  countCommitted(runId: string): Promise<number>;

  /**
   * What a run holds in the store: its keys (committed and claimed) and the bytes of its results, recorded
   * inputs and progress state, as UTF-8. What a run token's writes are bounded by (lib/api/run-scope.ts).
   */
  runFootprint(runId: string): Promise<{ keys: number; bytes: number }>;

  /** Committed rows of a run in step order, then key order. */
  listCommitted(runId: string, options?: { limit?: number; afterKey?: string }): Promise<CommittedRow[]>;

  /** Claims, optionally of one run or only the orphaned ones (lease passed by the store's clock). */
  listClaims(options?: {
    runId?: string;
    orphanedOnly?: boolean;
    claimTtlMs: number;
    /** A page of at most `limit` claims after the keyset cursor, in (claimedAt, idemKey) order. */
    limit?: number;
    after?: { claimedAt: number; idemKey: string };
  }): Promise<ClaimRow[]>;

  /** The claim on one key, if any, with whether it is orphaned by the store's clock. */
  getClaim(idemKey: string, options: { claimTtlMs: number }): Promise<ClaimRow | null>;

  /**
   * An operator gives up on a claim: the row is deleted, so any client can claim the key again, and an
   * `expired` event is recorded. Only an orphaned claim is expired unless `force` is set: `live` says the
   * lease has not passed, `missing` that there is no claim on the key.
   */
  expireClaim(
    idemKey: string,
    options: { actor: string; force?: boolean; claimTtlMs: number },
  ): Promise<'expired' | 'missing' | 'live'>;

  /**
   * An operator commits a result by hand (`source = manual`) for a claim whose side effect is in doubt,
   * deleting the claim and recording a `resolved` event; returns the claim's run. The claim's holder can no
   * longer commit (its token is gone). Whether the claim is orphaned (and still the attempt given) is decided
   * in the transaction that deletes it, by the store's clock: a check made by an earlier read could be
   * overtaken by a worker taking the claim over. Refusals write nothing: NotFoundError when there is no claim
   * on the key, ClaimNotOrphanedError when its lease is live (unless `force`) or its attempt is not the one
   * given, LeaseLostError when the key is already committed.
   */
  resolveClaim(request: ResolveRequest): Promise<{ runId: string }>;

  /** Append-only history of a run, oldest first. */
  listEvents(runId: string, options?: { limit?: number; afterId?: number }): Promise<StepEvent[]>;
}
