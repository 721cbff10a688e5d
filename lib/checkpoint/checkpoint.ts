/**
 * The checkpoint core: a run's progress (the map) and its committed side effects (the cargo), kept in a
 * store that outlives the process. `runOnce` is the article's three-phase protocol with leases and fencing:
 *
 *   claim   — one transaction: committed → return it (skipped); free or expired → claim it with a fresh
 *             token; held by a live lease → wait for its commit or its expiry (awaited, or take over).
 *   execute — fn runs with the key (to pass on as an Idempotency-Key) and a signal; the lease is renewed.
 *   commit  — one transaction: delete our claim where the token is ours, insert the result (and the
 *             progress, when given). A crash lands before it (the step runs again) or after (it is skipped).
 *             A caller that knows its next key has it claimed in this same transaction (options.next).
 */
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { AwaitTimeoutError, IdempotencyKeyReuseError, LeaseLostError, WaybillError } from '../errors';
import type { ClaimOutcome, ClaimRequest, CommitRequest, CommittedRow, ProgressWrite, Store } from '../store/types';
import { LeaseKeeper } from './lease';
import { StepCall, type StepContext } from './step-call';

export type { StepContext } from './step-call';
export type StepStatus = 'executed' | 'skipped' | 'awaited';

export interface RunOnceOptions {
  /** A digest of the step's input: a committed key reused with another fingerprint is an error. */
  fingerprint?: string;
  /** The step's position, recorded with the claim, the result and events. */
  step?: number;
  /**
   * Stops the call before it claims, and while it waits for another holder; never a side effect in flight,
   * which finishes and commits (half a side effect, aborted, is worse than a pause that comes one step late).
   * The side effect's own signal aborts only when its lease is lost.
   */
  signal?: AbortSignal;
  /** Give up waiting for another holder's commit after this long. Default: wait for its commit or expiry. */
  awaitTimeoutMs?: number;
  /** The caller's own attempt number (the engine's retries); takeovers raise it further. */
  attempt?: number;
  /** Progress to write in the commit transaction if this call executes the step. */
  progress?: { step: number; state: unknown };
  /**
   * The key the caller runs next, if it knows: claimed in this step's commit transaction, so an executed
   * step costs one transaction, not two. The next runOnce on that key starts from that claim; a claim taken
   * ahead and not used is released by releaseAhead() (or runOnce on another key).
   */
  next?: { idemKey: string; step?: number };
}

export interface StepResult<T> {
  result: T;
  status: StepStatus;
}

export interface CheckpointOptions {
  workerId?: string | null;
  /** How long a claim lives without renewal. A worker that dies mid-step blocks the key this long. */
  leaseMs?: number;
  /** How long a claim written by an outside client (no lease column) lives after claimed_at. */
  claimTtlMs?: number;
  /** Bounds of the jittered exponential backoff while awaiting another holder. */
  pollMs?: { min: number; max: number };
}

export class Checkpoint {
  readonly workerId: string | null;
  readonly leaseMs: number;
  readonly claimTtlMs: number;
  private readonly pollMs: { min: number; max: number };
  /** Counts not yet written: they ride with the next progress write. */
  private pending = { executed: 0, skipped: 0, awaited: 0 };
  /** How long our last progress write took; the next write stores it as the run's save cost. */
  private lastSaveMs: number | null = null;
  /**
   * The next key's claim, made by the last commit; outcome null when a lost reply left it unknown. `sentAt`
   * (performance.now() when the commit was sent) dates the lease it was taken with.
   */
  private ahead: Ahead | null = null;

  constructor(readonly store: Store, readonly runId: string, options: CheckpointOptions = {}) {
    this.workerId = options.workerId ?? null;
    this.leaseMs = options.leaseMs ?? 30_000;
    this.claimTtlMs = options.claimTtlMs ?? 30_000;
    this.pollMs = options.pollMs ?? { min: 5, max: 500 };
  }

  /** The resume point: the step reached and the state saved with it; step 0 and {} for a new run. */
  async load<S = Record<string, unknown>>(): Promise<{ step: number; state: S }> {
    const row = await this.store.loadProgress(this.runId);
    return row ? { step: row.step, state: JSON.parse(row.stateJson) as S } : { step: 0, state: {} as S };
  }

  /** Updates only the map; the cargo is already committed. Pending skip counts ride along. */
  async saveProgress(step: number, state: unknown): Promise<void> {
    const write = this.progressWrite(step, state, 0);
    const started = performance.now();
    await this.store.saveProgress(write);
    this.lastSaveMs = performance.now() - started;
    this.pending = { executed: 0, skipped: 0, awaited: 0 };
  }

  /** claim → execute → commit: fn runs at most once per key across every process sharing the store. */
  async runOnce<T>(idemKey: string, fn: (ctx: StepContext) => T | Promise<T>, options: RunOnceOptions = {}): Promise<StepResult<T>> {
    // Before the claim taken ahead is picked up, so that a stopped loop still holds it to give back.
    options.signal?.throwIfAborted();
    let token: string;
    /** An answer already in hand (the claim taken ahead), and when it was asked for: its lease runs from then. */
    let early: { outcome: ClaimOutcome; sentAt: number } | null = null;
    const ahead = this.ahead;
    if (ahead?.idemKey === idemKey) {
      this.ahead = null;
      token = ahead.token;
      // A claim taken ahead is only as good as its lease. Taken a while ago (the caller did other work between
      // steps), it is claimed again with the same token: renewed if still ours, else held or committed by
      // whoever took it over meanwhile. Executing on the old answer would run the step beside its new holder.
      const stale = ahead.outcome?.kind === 'claimed' && performance.now() - ahead.sentAt > this.leaseMs / 3;
      if (ahead.outcome && !stale) early = { outcome: ahead.outcome, sentAt: ahead.sentAt };
    } else {
      if (ahead) await this.releaseAhead();
      token = randomUUID();
    }
    const fingerprint = options.fingerprint ?? null;
    const started = Date.now();
    let waited = false;
    let delay = this.pollMs.min;
    for (;;) {
      options.signal?.throwIfAborted();
      const sentAt = early?.sentAt ?? performance.now();
      const outcome = early?.outcome ?? await this.claim(idemKey, token, options);
      early = null;
      if (outcome.kind === 'committed') return this.reuse<T>(outcome.row, fingerprint, waited ? 'awaited' : 'skipped', options.step);
      if (outcome.kind === 'claimed') return this.execute(idemKey, token, outcome.attempt, sentAt, fn, options, fingerprint);

      waited = true;
      if (options.awaitTimeoutMs !== undefined && Date.now() - started >= options.awaitTimeoutMs) {
        throw new AwaitTimeoutError(idemKey, Date.now() - started);
      }
      // Full jitter keeps racing waiters apart; never sleep past the holder's expiry by more than a tick.
      const wait = Math.min(delay * (0.5 + Math.random() / 2), outcome.msUntilExpiry + this.pollMs.min);
      await sleep(Math.max(1, wait), undefined, options.signal ? { signal: options.signal } : undefined);
      delay = Math.min(delay * 2, this.pollMs.max);
    }
  }

  /**
   * A claim whose answer may have been lost (the store gave up on a transient error) may be ours in the table:
   * the token is kept as a claim ahead of unknown outcome, so the caller's retry of this key claims with it
   * and finds it ours, instead of waiting a whole lease for a holder that is itself.
   */
  private async claim(idemKey: string, token: string, options: RunOnceOptions): Promise<ClaimOutcome> {
    try {
      return await this.store.claim(this.claimRequest(idemKey, token, options.step ?? null, options.attempt ?? 1));
    } catch (error) {
      if (error instanceof WaybillError && error.transient && !this.ahead) {
        this.ahead = { idemKey, token, step: options.step ?? null, outcome: null, sentAt: performance.now() };
      }
      throw error;
    }
  }

  /**
   * Gives back a claim the last commit took ahead for a key that will not run now (the loop stopped: paused,
   * cancelled, failed). Without this it would sit until its lease passed and then look orphaned, a side
   * effect in doubt, when it never started. No `failed` event: nothing failed.
   */
  async releaseAhead(): Promise<void> {
    const ahead = this.ahead;
    this.ahead = null;
    if (ahead) await this.release(ahead);
  }

  private async release(ahead: Ahead): Promise<void> {
    if (ahead.outcome?.kind === 'committed' || ahead.outcome?.kind === 'held') return;
    await this.store.releaseClaim({ idemKey: ahead.idemKey, token: ahead.token, runId: this.runId, step: ahead.step,
      workerId: this.workerId, durationMs: 0, error: null });
  }

  private async reuse<T>(row: CommittedRow, fingerprint: string | null, status: 'skipped' | 'awaited', step?: number): Promise<StepResult<T>> {
    if (fingerprint !== null && row.fingerprint !== null && row.fingerprint !== fingerprint) {
      const error = new IdempotencyKeyReuseError(row.idemKey, row.fingerprint, fingerprint);
      // On the run's timeline too: a reused key is a bug in how keys are derived, worth an operator's eye.
      await this.store.recordEvent({ runId: this.runId, outcome: 'key_reuse', idemKey: row.idemKey, step: step ?? null,
        workerId: this.workerId, detail: error.message });
      throw error;
    }
    this.pending[status]++;
    return { result: JSON.parse(row.resultJson) as T, status };
  }

  private async execute<T>(
    idemKey: string, token: string, attempt: number, claimedAt: number,
    fn: (ctx: StepContext) => T | Promise<T>, options: RunOnceOptions, fingerprint: string | null,
  ): Promise<StepResult<T>> {
    const call = new StepCall(idemKey, attempt, options.step, undefined);
    // The first renewal is due a third of a lease after the claim, not after now: a claim taken ahead has aged.
    const keeper = new LeaseKeeper(this.store, token, this.leaseMs, call, Math.max(0, this.leaseMs / 3 - (performance.now() - claimedAt)));
    const step = options.step ?? null;
    const started = performance.now();
    let result: T;
    try {
      result = await fn(call);
    } catch (error) {
      keeper.stop();
      const durationMs = performance.now() - started;
      const reason = call.reason instanceof LeaseLostError ? call.reason : error;
      await this.store.releaseClaim({
        idemKey, token, runId: this.runId, step, workerId: this.workerId, durationMs, error: describe(reason),
      });
      throw reason;
    }
    const committing = performance.now();
    const durationMs = committing - started;
    const progress = options.progress ? this.progressWrite(options.progress.step, options.progress.state, 1) : undefined;
    const next = options.next;
    const nextToken = next ? randomUUID() : '';
    let nextOutcome: ClaimOutcome | null;
    try {
      // The keeper renews until the commit is settled, so a commit retried while the store refuses writes but
      // still renews (a lock held long, a flapping connection) keeps its claim.
      nextOutcome = await this.commitSettled({
        idemKey, token, runId: this.runId, resultJson: JSON.stringify(result) ?? 'null', step, fingerprint,
        workerId: this.workerId, durationMs, progress,
        next: next ? this.claimRequest(next.idemKey, nextToken, next.step ?? null, 1) : undefined,
      });
    } finally {
      keeper.stop();
    }
    if (next) {
      // Two runOnce calls in flight on one checkpoint: the other's claim ahead is given back, not forgotten.
      const previous = this.ahead;
      this.ahead = { idemKey: next.idemKey, token: nextToken, step: next.step ?? null, outcome: nextOutcome, sentAt: committing };
      // Best effort: this step is committed whatever happens to that claim, which otherwise waits out its lease.
      if (previous) await this.release(previous).catch(() => undefined);
    }
    if (progress) {
      this.lastSaveMs = performance.now() - committing;
      this.pending = { executed: 0, skipped: 0, awaited: 0 };
    } else this.pending.executed++;
    return { result, status: 'executed' };
  }

  /**
   * The side effect has run, so its result must land under this token: otherwise the step runs again once the
   * lease passes. A transient failure that outlived the store's own retries (SQLite busy past its timeout,
   * PostgreSQL away) is retried here with the same token, the keeper renewing the claim meanwhile; a retry
   * that finds its claim gone recognises its earlier attempt's row (mayHaveLanded). A refusal (LeaseLostError)
   * or a permanent error ends it at once.
   *
   * What this cannot do is hold the claim through an outage that stops renewals too: once the lease passes,
   * another worker may take the key over, and this commit is then refused. Retries come at least six times a
   * lease so that, when the store returns, this commit usually lands before a rival's takeover. After
   * COMMIT_PATIENCE leases the error goes up and the step is retried like any failed step: at least once, with
   * the same idempotency key for the side effect to deduplicate on, as a lease-based system must.
   */
  private async commitSettled(request: CommitRequest): Promise<ClaimOutcome | null> {
    const deadline = performance.now() + Math.max(COMMIT_PATIENCE * this.leaseMs, 60_000);
    const maxDelay = Math.min(5_000, this.leaseMs / 6);
    let delay = Math.min(50, maxDelay);
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.store.commit(attempt === 0 ? request : { ...request, mayHaveLanded: true });
      } catch (error) {
        if (!(error instanceof WaybillError && error.transient) || performance.now() >= deadline) throw error;
      }
      await sleep(delay * (0.5 + Math.random() / 2));
      delay = Math.min(delay * 2, maxDelay);
    }
  }

  private claimRequest(idemKey: string, token: string, step: number | null, attempt: number): ClaimRequest {
    return { idemKey, runId: this.runId, token, workerId: this.workerId, step, attempt, leaseMs: this.leaseMs, claimTtlMs: this.claimTtlMs };
  }

  private progressWrite(step: number, state: unknown, executedNow: number): ProgressWrite {
    return {
      runId: this.runId, step, stateJson: JSON.stringify(state) ?? 'null',
      executed: this.pending.executed + executedNow, skipped: this.pending.skipped, awaited: this.pending.awaited,
      saveMs: this.lastSaveMs,
    };
  }
}

/** How many leases' time a commit keeps retrying through an outage before it gives up and the step is retried. */
const COMMIT_PATIENCE = 10;

interface Ahead {
  idemKey: string;
  token: string;
  step: number | null;
  outcome: ClaimOutcome | null;
  sentAt: number;
}

function describe(error: unknown): string {
  if (error instanceof Error) return `${error.name}: ${error.message}`;
  return String(error);
}
