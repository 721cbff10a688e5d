/**
 * The article's agent loop: read to start, run each step once, advance the map. The map is written in the
 * same transaction as each step's commit, and so is the next step's claim: an executed step costs one
 * transaction; a skipped step costs none, its count riding with the next write.
 *
 * Given a Checkpoint that declares its run (options.workflow here or on the Checkpoint), the loop is a run
 * like any other: listed by name with its total, completed (or failed) when it ends, and stopped before its
 * next step by a pause or a cancel, with RunPausedError or RunCancelledError.
 */
import { InvalidInputError, RunStoppedError } from '../errors';
import type { RunOnceOptions, StepContext, StepResult } from './checkpoint';
import { contentKey, stepKey } from './keys';

export interface AgentStepContext extends StepContext {
  readonly step: number;
}

/** What the loop needs of its runner: a Checkpoint, or the engine's RunContext (which adds retries). */
export interface StepRunner {
  readonly runId: string;
  load<S>(): Promise<{ step: number; state: S }>;
  saveProgress(step: number, state: unknown): Promise<void>;
  runOnce<T>(key: string, fn: (ctx: StepContext) => T | Promise<T>, options?: RunOnceOptions): Promise<StepResult<T>>;
  /** Gives back the claim taken ahead for a next step that will not run now. */
  releaseAhead(): Promise<void>;
  /** A library loop's own run (Checkpoint); the engine's RunContext has none: its worker records the run. */
  declare?(run: { workflow?: string; totalSteps?: number; input?: unknown }): void;
  readonly declared?: boolean;
  complete?(output?: unknown): Promise<void>;
  fail?(error: unknown): Promise<void>;
  /** Checks a step done before against its input's fingerprint now, running nothing (Checkpoint.checkCommitted). */
  checkCommitted?(idemKey: string, fingerprint: string, step?: number): Promise<void>;
}

export interface AgentOptions<I> {
  signal?: AbortSignal;
  /** Declares the run under this workflow name (see CheckpointOptions.workflow). */
  workflow?: string;
  /** The run's total for a declared run; the inputs' length by default. */
  totalSteps?: number;
  /** The run's input for a declared run, shown on its page. */
  input?: unknown;
  /**
   * Each step's input fingerprint: by default a content hash of the item (its canonical JSON, sha-256), so a
   * run id reused with other inputs raises IdempotencyKeyReuseError instead of returning the old results.
   * A function supplies your own (for items that are not JSON, or to hash only what matters); false turns it off.
   */
  fingerprint?: false | ((item: I, step: number) => string);
}

export interface AgentReport {
  /** The saved `processed` count: steps this run executed, across every resume. */
  processed: number;
  /** What this call did. */
  executed: number;
  skipped: number;
  awaited: number;
}

export async function runAgent<I, R>(
  inputs: readonly I[],
  checkpoint: StepRunner,
  handler: (item: I, ctx: AgentStepContext) => R | Promise<R>,
  options: AgentOptions<I> = {},
): Promise<AgentReport> {
  if (options.workflow !== undefined || options.totalSteps !== undefined || checkpoint.declared) {
    if (!checkpoint.declare)
      throw new InvalidInputError("this runner's run is declared by its workflow definition, not by runAgent options");
    checkpoint.declare({
      workflow: options.workflow,
      totalSteps: options.totalSteps ?? inputs.length,
      input: options.input,
    });
  }
  const fingerprint = options.fingerprint === false ? null : (options.fingerprint ?? ((item: I) => contentKey(item)));
  const { step: start, state } = await checkpoint.load<{ processed?: number }>();
  const report: AgentReport = { processed: state.processed ?? 0, executed: 0, skipped: 0, awaited: 0 };
  let mapBehind = false;
  try {
    // Resuming past steps done before, none of which runs again: the first and the last of them are checked
    // against the inputs given now (two reads), so a run id reused with other inputs is an error, not a quiet
    // return of the old results. A change in between shows only if one of those steps runs again.
    const done = Math.min(start, inputs.length);
    if (fingerprint && checkpoint.checkCommitted && done > 0) {
      for (const step of new Set([0, done - 1])) {
        await checkpoint.checkCommitted(stepKey(checkpoint.runId, step), fingerprint(inputs[step] as I, step), step);
      }
    }
    for (let step = start; step < inputs.length; step++) {
      const item = inputs[step] as I;
      const { status } = await checkpoint.runOnce(
        stepKey(checkpoint.runId, step),
        (ctx) => handler(item, ctx as AgentStepContext),
        {
          step,
          // The item is what the step processes: recorded beside its result, bounded (step-input.ts).
          input: item,
          signal: options.signal,
          fingerprint: fingerprint ? fingerprint(item, step) : undefined,
          progress: { step: step + 1, state: { processed: report.processed + 1 } },
          // Claimed in this step's commit: one transaction per executed step.
          next: step + 1 < inputs.length ? { idemKey: stepKey(checkpoint.runId, step + 1), step: step + 1 } : undefined,
        },
      );
      report[status]++;
      if (status === 'executed') report.processed++;
      mapBehind = status !== 'executed';
    }
    // The last steps were already committed by someone else: catch the map up once, with their counts.
    if (mapBehind) await checkpoint.saveProgress(inputs.length, { processed: report.processed });
  } catch (error) {
    // The loop stopped early (abort, failure): the next step's claim, if one was taken, goes back now. If that
    // fails too, the claim's lease runs out on its own; the loop's own error is the one worth reporting.
    await checkpoint.releaseAhead().catch(() => undefined);
    // A pause or cancel is not a failure: the run keeps the status the operator gave it.
    if (!(error instanceof RunStoppedError)) await checkpoint.fail?.(error).catch(() => undefined);
    throw error;
  }
  await checkpoint.complete?.(report);
  return report;
}
