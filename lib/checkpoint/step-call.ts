/**
 * What a side effect receives. The AbortSignal is made only when the side effect reads it: most never do,
 * and an AbortController per step is a measurable share of a step's cost.
 */
export interface StepContext {
  /** Pass this on to the side effect's receiver (an Idempotency-Key header): it closes the crash window
   * between the side effect and the commit, which no store can close. */
  readonly idempotencyKey: string;
  /** Aborted when the lease is lost or the step's timeoutMs passes (the caller's own signal stops it between steps, not here). */
  readonly signal: AbortSignal;
  /** 1 on the first claim of this key; higher after a takeover or when the caller retries. */
  readonly attempt: number;
  /**
   * True when this claim took the key over from a holder whose lease ran out mid-execute: that attempt may
   * have done the side effect without committing. Pass the idempotency key on (as always), or check the
   * receiver before doing it again.
   */
  readonly inDoubt: boolean;
  /** The step's position, when the caller gave one. */
  readonly step: number | undefined;
}

export class StepCall implements StepContext {
  private controller: AbortController | undefined;
  /** Why the call was aborted by us (a lost lease), whether or not the side effect looked. */
  reason: unknown;

  constructor(
    readonly idempotencyKey: string,
    readonly attempt: number,
    readonly step: number | undefined,
    readonly inDoubt: boolean,
  ) {}

  get signal(): AbortSignal {
    if (!this.controller) {
      this.controller = new AbortController();
      if (this.reason !== undefined) this.controller.abort(this.reason);
    }
    return this.controller.signal;
  }

  abort(reason: unknown): void {
    this.reason ??= reason;
    this.controller?.abort(reason);
  }
}
