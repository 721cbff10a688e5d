/**
 * What a workflow sees of its run: exactly-once steps with retries, the map, a signal, a logger.
 * Steps retry transient failures with exponential backoff and full jitter up to the workflow's
 * maxAttempts; errors that retrying cannot fix (a lost lease, a reused key, an abort) pass straight up.
 */
import type { Checkpoint, RunOnceOptions, StepContext, StepResult } from '../checkpoint/checkpoint';
import { systemClock, type Clock } from '../clock';
import { IdempotencyKeyReuseError, LeaseLostError, StepFailedError } from '../errors';
import type { Logger } from './log';
import { sleepUntil, waitForApproval, waitForSignal, type Approval, type ApprovalOptions, type Parking, type SignalResult } from './waits';

export interface RetryPolicy {
  maxAttempts: number;
  baseMs: number;
  maxMs: number;
}


export class RunContext {
  constructor(
    readonly runId: string,
    readonly checkpoint: Checkpoint,
    /**
     * Aborted when the run is paused, cancelled or taken over, or the worker drains. It stops the run between
     * steps (and a step still waiting for another holder's claim), never a side effect in flight: the step in
     * hand finishes and commits first.
     */
    readonly signal: AbortSignal,
    readonly log: Logger,
    private readonly retry: RetryPolicy,
    /** The retries' backoff waits on it (the worker's clock). */
    private readonly clock: Clock = systemClock,
    /** Durable waits (waits.ts): the store and this execution's fence. Absent: a context that cannot park. */
    private readonly parking?: Parking,
  ) {}

  // --- durable waits (lib/engine/waits.ts) ---
  private sleeps = 0;

  /** Parks the run until an operator approves or rejects `name` (or its timeout decides). */
  waitForApproval(name: string, options?: ApprovalOptions): Promise<Approval> {
    return waitForApproval(this.parked(), this.runId, name, options);
  }

  /** Parks the run until the signal `name` arrives (one sent earlier is already there) or it times out. */
  waitForSignal<T = unknown>(name: string, options?: { timeoutMs?: number }): Promise<SignalResult<T>> {
    return waitForSignal<T>(this.parked(), this.runId, name, options);
  }

  /**
   * Parks the run for `ms` (from the first time it got here) or until a moment. Unnamed sleeps are numbered
   * in call order (`sleep#1`, …), which replay repeats; name one when the order may change between versions.
   */
  sleep(until: number | Date, name?: string): Promise<void> {
    return sleepUntil(this.parked(), this.runId, name ?? `sleep#${++this.sleeps}`, until);
  }

  private parked(): Parking {
    if (!this.parking) throw new Error('this run context cannot wait: it was built without a store to park in');
    this.signal.throwIfAborted();
    return this.parking;
  }
  // --- end durable waits ---

  load<S = Record<string, unknown>>(): Promise<{ step: number; state: S }> {
    return this.checkpoint.load<S>();
  }

  saveProgress(step: number, state: unknown): Promise<void> {
    return this.checkpoint.saveProgress(step, state);
  }

  releaseAhead(): Promise<void> {
    return this.checkpoint.releaseAhead();
  }

  /** A named step: its key is derived from the run and the name, which must be stable across resumes. */
  step<T>(name: string, fn: (ctx: StepContext) => T | Promise<T>, options: Omit<RunOnceOptions, 'signal' | 'attempt'> = {}): Promise<StepResult<T>> {
    return this.runOnce(`${this.runId}:${name}`, fn, options);
  }

  async runOnce<T>(key: string, fn: (ctx: StepContext) => T | Promise<T>, options: RunOnceOptions = {}): Promise<StepResult<T>> {
    // The run's own signal and attempt count replace the caller's.
    for (let attempt = 1; ; attempt++) {
      this.signal.throwIfAborted();
      try {
        const outcome = await this.checkpoint.runOnce(key, fn, { ...options, attempt, signal: this.signal });
        this.log.info(`step ${outcome.status}`, { key, step: options.step, attempt });
        return outcome;
      } catch (error) {
        if (!retryable(error) || this.signal.aborted) throw error;
        if (attempt >= this.retry.maxAttempts) throw new StepFailedError(key, attempt, error);
        const delay = Math.random() * Math.min(this.retry.maxMs, this.retry.baseMs * 2 ** (attempt - 1));
        this.log.warn('step failed; retrying', { key, step: options.step, attempt, delayMs: Math.round(delay),
          error: error instanceof Error ? error.message : String(error) });
        await this.clock.sleep(delay, this.signal);
      }
    }
  }
}

function retryable(error: unknown): boolean {
  if (error instanceof LeaseLostError || error instanceof IdempotencyKeyReuseError) return false;
  if (error instanceof Error && error.name === 'AbortError') return false;
  return true;
}
