/**
 * What a workflow sees of its run: exactly-once steps with retries, the map, a signal, a logger.
 * Steps retry transient failures with exponential backoff and full jitter up to the workflow's
 * maxAttempts; errors that retrying cannot fix (a lost lease, a reused key, an abort) pass straight up.
 */
import type { Checkpoint, RunOnceOptions, StepContext, StepResult } from '../checkpoint/checkpoint';
import { systemClock, type Clock } from '../clock';
import { IdempotencyKeyReuseError, LeaseLostError, StepFailedError } from '../errors';
import type { Logger } from './log';

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
  ) {}

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
