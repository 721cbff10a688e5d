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
 *
 * Longer than our ~300-line rule on purpose: the protocol is meant to be read in one sitting (docs/ARCHITECTURE.md), so
 * claim, execute, commit and their retries stay together; what stands alone (the lease keeper, keys, holders,
 * loop runs) has its own file.
 */

import { type Clock, systemClock } from '../clock';
import { AwaitTimeoutError, IdempotencyKeyReuseError, LeaseLostError, StepTimeoutError, WaybillError } from '../errors';
import type {
  ClaimOutcome,
  ClaimRequest,
  CommitOutcome,
  CommitRequest,
  CommittedRow,
  ProgressWrite,
  RunStatus,
  StepStore,
} from '../store/contract';
import { holderGone, mintToken } from './holder';
import { assertIdempotencyKey } from './keys';
import { LeaseKeeper } from './lease';
import { LoopRun, stops } from './loop-run';
import { StepCall, type StepContext } from './step-call';
import { recordedInput } from './step-input';

export type { StepContext } from './step-call';
export type StepStatus = 'executed' | 'skipped' | 'awaited';

export interface RunOnceOptions {
  /** A digest of the step's input: a committed key reused with another fingerprint is an error. */
  fingerprint?: string;
  /** The step's position, recorded with the claim, the result and events. */
  step?: number;
  /** What the step is given, recorded beside its result (bounded: step-input.ts) and shown on its page. */
  input?: unknown;
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
  /**
   * An attempt of fn running longer than this fails with StepTimeoutError: the side effect's signal is
   * aborted with it and its claim released. A side effect that ignores its signal runs on, its result unused;
   * the next attempt carries the same idempotency key for the receiver to deduplicate on.
   */
  timeoutMs?: number;
  /**
   * When fn fails: what the caller's retry policy makes of it, recorded on the `failed` event as data — how many
   * attempts it allows, and when the next is due (epoch ms by the caller's clock; null: none will be).
   */
  nextAttempt?: (error: unknown) => { maxAttempts: number; retryAt: number | null };
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
  /**
   * Declares the run a library loop's own: its runs row (this workflow name, the total, status `running`)
   * is written as the loop starts — load() or the first runOnce — so the dashboard lists it by name with its
   * progress and ETA, not as `external`. A pause or cancel then stops the loop before its next step
   * (RunPausedError, RunCancelledError), and complete()/fail() record how it ended (runAgent calls them).
   */
  workflow?: string;
  /** The run's number of steps, for its progress and ETA (runAgent gives its inputs' length). */
  totalSteps?: number;
  /** The run's input, shown on its page; any JSON. */
  input?: unknown;
  /**
   * Durations, the lease keeper's renewals, the waits for another holder and the commit's retries run on it.
   * Give the store's own clock (a test's ManualClock): the lease a claim is judged by is the store's.
   */
  clock?: Clock;
  /**
   * The run's execution these steps belong to: the run's `attempts` when the worker took it (claimRun). Every
   * claim is then made only while the run is still that execution's (ClaimRequest.fence), so a copy that was
   * rerun, taken over or handed back starts no further step: its claim is LeaseLostError. The engine sets it.
   */
  fence?: number;
  /**
   * Told how long each write that committed took, in ms: a step's commit (with its progress, when given) or
   * a progress save. The worker observes it into its commit histogram; nothing is stored.
   */
  onCommitted?: (ms: number) => void;
}

export class Checkpoint {
  readonly workerId: string | null;
  readonly leaseMs: number;
  readonly claimTtlMs: number;
  readonly clock: Clock;
  /** The run's execution this checkpoint claims for (CheckpointOptions.fence). */
  readonly fence: number | undefined;
  private readonly pollMs: { min: number; max: number };
  private readonly onCommitted: ((ms: number) => void) | undefined;
  /** Counts not yet written: they ride with the next progress write. */
  private pending = { executed: 0, skipped: 0, awaited: 0 };
  /** How long our last progress write took; the next write stores it as the run's save cost. */
  private lastSaveMs: number | null = null;
  /**
   * The next key's claim, made by the last commit; outcome null when a lost reply left it unknown. `sentAt`
   * (the clock's monotonic time when the commit was sent) dates the lease it was taken with.
   */
  private ahead: Ahead | null = null;
  /** The run as this loop declared it (options.workflow, or declare()); null for an undeclared run. */
  private loop: LoopRun | null = null;
  private status: RunStatus | null = null;
  /**
   * Steps whose side effect ran but whose commit failed for good (a statement the store refused, its retries
   * spent): their claims are still ours in the table, under these tokens. The caller's retry of such a key
   * commits the result it already has, with the same token, rather than claiming anew and running the side
   * effect a second time (or, with a fresh token, waiting out its own lease first and then running it).
   */
  private readonly unsettled = new Map<string, Unsettled>();

  constructor(
    readonly store: StepStore,
    readonly runId: string,
    options: CheckpointOptions = {},
  ) {
    this.workerId = options.workerId ?? null;
    this.leaseMs = options.leaseMs ?? 30_000;
    this.claimTtlMs = options.claimTtlMs ?? 30_000;
    this.pollMs = options.pollMs ?? { min: 5, max: 500 };
    this.clock = options.clock ?? systemClock;
    this.fence = options.fence;
    this.onCommitted = options.onCommitted;
    if (options.workflow !== undefined || options.totalSteps !== undefined) {
      this.declare({ workflow: options.workflow, totalSteps: options.totalSteps, input: options.input });
    }
  }

  /**
   * The run's status as the store last reported it (with the run's start, then with every commit); null
   * before the first commit, or for a run with no runs row (an outside client's).
   */
  get runStatus(): RunStatus | null {
    return this.status;
  }

  /**
   * Declares the run (see CheckpointOptions.workflow) before the loop starts; what was declared already is
   * kept, and once the loop has started its row is written and this changes nothing. runAgent calls it with
   * its inputs' length as the total.
   */
  declare(run: { workflow?: string; totalSteps?: number; input?: unknown }): void {
    this.loop = LoopRun.declare(this.loop, this.store, this.runId, this.workerId, run);
  }

  /** Whether this loop declared its run: only then do pause and cancel stop it. */
  get declared(): boolean {
    return this.loop !== null;
  }

  /** A declared run's steps are all done: it is completed (a cancelled run stays cancelled). */
  async complete(output?: unknown): Promise<void> {
    if (this.loop) this.status = await this.loop.end('completed', { output });
  }

  /** A declared run's loop gave up on an error: the run is failed, with it, until the loop starts again. */
  async fail(error: unknown): Promise<void> {
    if (this.loop?.started) this.status = await this.loop.end('failed', { error: describe(error) });
  }

  /** The resume point: the step reached and the state saved with it; step 0 and {} for a new run. */
  async load<S = Record<string, unknown>>(): Promise<{ step: number; state: S }> {
    if (this.loop) await this.beforeStep(this.loop);
    const row = await this.store.loadProgress(this.runId);
    return row ? { step: row.step, state: JSON.parse(row.stateJson) as S } : { step: 0, state: {} as S };
  }

  /** Updates only the map; the cargo is already committed. Pending skip counts ride along. */
  async saveProgress(step: number, state: unknown): Promise<void> {
    const write = this.progressWrite(step, state, 0);
    const started = this.clock.monotonic();
    await this.store.saveProgress(write);
    this.lastSaveMs = this.clock.monotonic() - started;
    this.onCommitted?.(this.lastSaveMs);
    this.pending = { executed: 0, skipped: 0, awaited: 0 };
  }

  /** claim → execute → commit: fn runs at most once per key across every process sharing the store. */
  async runOnce<T>(
    idemKey: string,
    fn: (ctx: StepContext) => T | Promise<T>,
    options: RunOnceOptions = {},
  ): Promise<StepResult<T>> {
    // A key PostgreSQL would store as another key, or SQLite garble: refused before anything is written.
    assertIdempotencyKey(idemKey);
    if (options.next) assertIdempotencyKey(options.next.idemKey, 'next idempotency key');
    // Before the claim taken ahead is picked up, so that a stopped loop still holds it to give back.
    options.signal?.throwIfAborted();
    if (this.loop) await this.beforeStep(this.loop);
    const unsettled = this.unsettled.get(idemKey);
    if (unsettled) {
      const settled = await this.settleAgain<T>(unsettled as Unsettled<T>);
      if (settled) return settled;
    }
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
      const stale = ahead.outcome?.kind === 'claimed' && this.clock.monotonic() - ahead.sentAt > this.leaseMs / 3;
      if (ahead.outcome && !stale) early = { outcome: ahead.outcome, sentAt: ahead.sentAt };
    } else {
      if (ahead) await this.releaseAhead();
      token = mintToken();
    }
    const fingerprint = options.fingerprint ?? null;
    const started = this.clock.monotonic();
    let waited = false;
    let delay = this.pollMs.min;
    let deadHolder: string | null = null;
    for (;;) {
      options.signal?.throwIfAborted();
      const sentAt = early?.sentAt ?? this.clock.monotonic();
      const outcome = early?.outcome ?? (await this.claim(idemKey, token, options));
      early = null;
      if (outcome.kind === 'committed')
        return this.reuse<T>(outcome.row, fingerprint, waited ? 'awaited' : 'skipped', options.step);
      if (outcome.kind === 'claimed') {
        // The lease runs from when the claim was sent, on the monotonic clock. A process stopped since (SIGSTOP,
        // a VM paused, a long GC) wakes past it, its answer in hand: a successor may have taken the key over and
        // committed meanwhile. The side effect must not start on that lease; the same token asks again, and the
        // store says whether the claim is still ours (renewed), held by another, or committed.
        if (this.clock.monotonic() - sentAt >= this.leaseMs) continue;
        const inDoubt = outcome.tookOverFrom !== null;
        return this.execute(idemKey, token, { attempt: outcome.attempt, inDoubt }, sentAt, fn, options, fingerprint);
      }

      const holder = outcome.holder;
      if (
        holder.workerId === this.workerId &&
        holder.token !== null &&
        holder.token !== deadHolder &&
        holderGone(holder.token)
      ) {
        // Our own worker id, from a process on this machine that has exited (a loop restarted after a crash):
        // no one can commit under that token any more, so the lease would only be waited out. A lease renewed
        // to zero ends now, token-checked (a claim that changed hands meanwhile is left alone), and the claim
        // below takes it over as any passed lease: a higher attempt and an `expired` event.
        deadHolder = holder.token;
        await this.store.renewClaim(idemKey, holder.token, 0);
        continue;
      }
      waited = true;
      if (options.awaitTimeoutMs !== undefined && this.clock.monotonic() - started >= options.awaitTimeoutMs) {
        throw new AwaitTimeoutError(idemKey, this.clock.monotonic() - started);
      }
      // Full jitter keeps racing waiters apart; never sleep past the holder's expiry by more than a tick.
      const wait = Math.min(delay * (0.5 + Math.random() / 2), outcome.msUntilExpiry + this.pollMs.min);
      await this.clock.sleep(Math.max(1, wait), options.signal);
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
        this.ahead = { idemKey, token, step: options.step ?? null, outcome: null, sentAt: this.clock.monotonic() };
      }
      throw error;
    }
  }

  /**
   * Checks a step done before against the fingerprint its input has now, without running anything: a key
   * committed with another fingerprint is IdempotencyKeyReuseError (on the timeline too), as runOnce would
   * raise it. A key not committed, or committed without a fingerprint, passes. runAgent calls it as it resumes.
   */
  async checkCommitted(idemKey: string, fingerprint: string, step?: number): Promise<void> {
    const row = await this.store.getCommitted(idemKey);
    if (row) await this.refuseReuse(row, fingerprint, step);
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
    await this.store.releaseClaim({
      idemKey: ahead.idemKey,
      token: ahead.token,
      runId: this.runId,
      step: ahead.step,
      workerId: this.workerId,
      durationMs: 0,
      error: null,
    });
  }

  private async reuse<T>(
    row: CommittedRow,
    fingerprint: string | null,
    status: 'skipped' | 'awaited',
    step?: number,
  ): Promise<StepResult<T>> {
    await this.refuseReuse(row, fingerprint, step);
    this.pending[status]++;
    return { result: JSON.parse(row.resultJson) as T, status };
  }

  private async refuseReuse(row: CommittedRow, fingerprint: string | null, step?: number): Promise<void> {
    if (fingerprint === null || row.fingerprint === null || row.fingerprint === fingerprint) return;
    const error = new IdempotencyKeyReuseError(row.idemKey, row.fingerprint, fingerprint);
    // On the run's timeline too: a reused key is a bug in how keys are derived, worth an operator's eye.
    await this.store.recordEvent({
      runId: this.runId,
      outcome: 'key_reuse',
      idemKey: row.idemKey,
      step: step ?? null,
      workerId: this.workerId,
      detail: error.message,
    });
    throw error;
  }

  private async execute<T>(
    idemKey: string,
    token: string,
    { attempt, inDoubt }: { attempt: number; inDoubt: boolean },
    claimedAt: number,
    fn: (ctx: StepContext) => T | Promise<T>,
    options: RunOnceOptions,
    fingerprint: string | null,
  ): Promise<StepResult<T>> {
    const call = new StepCall(idemKey, attempt, options.step, inDoubt);
    // The first renewal is due a third of a lease after the claim, not after now: a claim taken ahead has aged.
    const keeper = new LeaseKeeper(
      this.store,
      this.clock,
      token,
      this.leaseMs,
      call,
      Math.max(0, this.leaseMs / 3 - (this.clock.monotonic() - claimedAt)),
    );
    const step = options.step ?? null;
    const started = this.clock.monotonic();
    let result: T;
    try {
      result = options.timeoutMs === undefined ? await fn(call) : await this.timed(fn, call, options.timeoutMs);
    } catch (error) {
      keeper.stop();
      const durationMs = this.clock.monotonic() - started;
      const reason = call.reason instanceof LeaseLostError ? call.reason : error;
      const next = options.nextAttempt?.(reason);
      await this.store.releaseClaim({
        idemKey,
        token,
        runId: this.runId,
        step,
        workerId: this.workerId,
        durationMs,
        error: describe(reason),
        attempt,
        maxAttempts: next?.maxAttempts ?? null,
        retryAt: next && next.retryAt !== null ? next.retryAt / 1000 : null,
      });
      throw reason;
    }
    const committing = this.clock.monotonic();
    const durationMs = committing - started;
    const progress = options.progress
      ? this.progressWrite(options.progress.step, options.progress.state, 1)
      : undefined;
    const next = options.next;
    const nextToken = next ? mintToken() : '';
    const pending: Unsettled<T> = {
      result,
      committing,
      next,
      nextToken,
      request: {
        idemKey,
        token,
        runId: this.runId,
        resultJson: JSON.stringify(result) ?? 'null',
        step,
        fingerprint,
        workerId: this.workerId,
        durationMs,
        progress,
        inputJson: recordedInput(options.input),
        attempt,
        next: next ? this.claimRequest(next.idemKey, nextToken, next.step ?? null, 1) : undefined,
      },
    };
    return this.settle(pending, keeper);
  }

  /** fn raced against its timeout on the clock: past it, the signal aborts and the attempt fails. */
  private timed<T>(fn: (ctx: StepContext) => T | Promise<T>, call: StepCall, timeoutMs: number): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const handle = this.clock.setTimeout(() => {
        const error = new StepTimeoutError(call.idempotencyKey, timeoutMs);
        call.abort(error);
        reject(error);
      }, timeoutMs);
      Promise.resolve()
        .then(() => fn(call))
        .then(resolve, reject)
        .finally(() => this.clock.clearTimeout(handle));
    });
  }

  /**
   * Commits an executed step's result and takes the next key's claim with it. The keeper renews until the
   * commit is settled, so a commit retried while the store refuses writes but still renews (a lock held long,
   * a flapping connection) keeps its claim. A commit that fails for good is kept (see `unsettled`), unless
   * the claim is lost: then it is not ours to commit.
   */
  private async settle<T>(pending: Unsettled<T>, keeper: LeaseKeeper): Promise<StepResult<T>> {
    const { request, next } = pending;
    let outcome: CommitOutcome;
    try {
      outcome = await this.commitSettled(request);
      this.unsettled.delete(request.idemKey);
      this.onCommitted?.(this.clock.monotonic() - pending.committing);
    } catch (error) {
      if (error instanceof LeaseLostError) this.unsettled.delete(request.idemKey);
      else this.unsettled.set(request.idemKey, pending);
      throw error;
    } finally {
      keeper.stop();
    }
    this.status = outcome.runStatus;
    // A paused or cancelled run had no next key claimed (CommitOutcome.next): there is nothing to give back.
    if (next && !stops(outcome.runStatus)) {
      // Two runOnce calls in flight on one checkpoint: the other's claim ahead is given back, not forgotten.
      const previous = this.ahead;
      this.ahead = {
        idemKey: next.idemKey,
        token: pending.nextToken,
        step: next.step ?? null,
        outcome: outcome.next,
        sentAt: pending.committing,
      };
      // Best effort: this step is committed whatever happens to that claim, which otherwise waits out its lease.
      if (previous) await this.release(previous).catch(() => undefined);
    }
    if (request.progress) {
      this.lastSaveMs = this.clock.monotonic() - pending.committing;
      this.pending = { executed: 0, skipped: 0, awaited: 0 };
    } else this.pending.executed++;
    return { result: pending.result, status: 'executed' };
  }

  /**
   * The retry of a step whose commit failed for good: the same commit again, same token, marked as one that
   * may have landed (a cancelled statement may have run). Null when the claim turned out lost (expired by an
   * operator, taken over after its lease, resolved by hand): the caller claims the key as if new, and the
   * claim decides (committed → skipped, held → awaited, free → run again, as an expiry means).
   */
  private async settleAgain<T>(pending: Unsettled<T>): Promise<StepResult<T> | null> {
    const { request } = pending;
    const call = new StepCall(request.idemKey, 1, request.step ?? undefined, false);
    const keeper = new LeaseKeeper(this.store, this.clock, request.token, this.leaseMs, call, 0);
    pending.committing = this.clock.monotonic();
    try {
      return await this.settle({ ...pending, request: { ...request, mayHaveLanded: true } }, keeper);
    } catch (error) {
      if (error instanceof LeaseLostError) return null;
      throw error;
    }
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
  private async commitSettled(request: CommitRequest): Promise<CommitOutcome> {
    const deadline = this.clock.monotonic() + Math.max(COMMIT_PATIENCE * this.leaseMs, 60_000);
    const maxDelay = Math.min(5_000, this.leaseMs / 6);
    let delay = Math.min(50, maxDelay);
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.store.commit(attempt === 0 ? request : { ...request, mayHaveLanded: true });
      } catch (error) {
        if (!(error instanceof WaybillError && error.transient) || this.clock.monotonic() >= deadline) throw error;
      }
      await this.clock.sleep(delay * (0.5 + Math.random() / 2));
      delay = Math.min(delay * 2, maxDelay);
    }
  }

  /**
   * Before each step of a declared run (and as it loads): a pause or cancel seen at its start or by the last
   * commit stops the loop here, the step before committed and this one not started. Its claim taken ahead
   * (none, after such a commit) goes back.
   */
  private async beforeStep(loop: LoopRun): Promise<void> {
    this.status = (await loop.begin()) ?? this.status;
    await loop.stopIf(this.status, () => this.releaseAhead());
  }

  private claimRequest(idemKey: string, token: string, step: number | null, attempt: number): ClaimRequest {
    return {
      idemKey,
      runId: this.runId,
      token,
      workerId: this.workerId,
      step,
      attempt,
      leaseMs: this.leaseMs,
      claimTtlMs: this.claimTtlMs,
      ...(this.fence === undefined ? {} : { fence: this.fence }),
    };
  }

  private progressWrite(step: number, state: unknown, executedNow: number): ProgressWrite {
    return {
      runId: this.runId,
      step,
      stateJson: JSON.stringify(state) ?? 'null',
      executed: this.pending.executed + executedNow,
      skipped: this.pending.skipped,
      awaited: this.pending.awaited,
      saveMs: this.lastSaveMs,
    };
  }
}

/** How many leases' time a commit keeps retrying through an outage before it gives up and the step is retried. */
const COMMIT_PATIENCE = 10;

interface Unsettled<T = unknown> {
  request: CommitRequest;
  result: T;
  next: RunOnceOptions['next'];
  nextToken: string;
  /** The clock's monotonic time when the commit was (last) sent: the next key's claim is dated from it. */
  committing: number;
}

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
