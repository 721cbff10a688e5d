/**
 * The article's agent loop: read to start, run each step once, advance the map. The map is written in the
 * same transaction as each step's commit, and so is the next step's claim: an executed step costs one
 * transaction; a skipped step costs none, its count riding with the next write.
 */
import type { RunOnceOptions, StepContext, StepResult } from './checkpoint';
import { stepKey } from './keys';

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
  options: { signal?: AbortSignal } = {},
): Promise<AgentReport> {
  const { step: start, state } = await checkpoint.load<{ processed?: number }>();
  const report: AgentReport = { processed: state.processed ?? 0, executed: 0, skipped: 0, awaited: 0 };
  let mapBehind = false;
  try {
    for (let step = start; step < inputs.length; step++) {
      const item = inputs[step] as I;
      const { status } = await checkpoint.runOnce(stepKey(checkpoint.runId, step), (ctx) => handler(item, ctx as AgentStepContext), {
        step,
        signal: options.signal,
        progress: { step: step + 1, state: { processed: report.processed + 1 } },
        // Claimed in this step's commit: one transaction per executed step.
        next: step + 1 < inputs.length ? { idemKey: stepKey(checkpoint.runId, step + 1), step: step + 1 } : undefined,
      });
      report[status]++;
      if (status === 'executed') report.processed++;
      mapBehind = status !== 'executed';
    }
  } catch (error) {
    // The loop stopped early (abort, failure): the next step's claim, if one was taken, goes back now. If that
    // fails too, the claim's lease runs out on its own; the loop's own error is the one worth reporting.
    await checkpoint.releaseAhead().catch(() => undefined);
    throw error;
  }
  // The last steps were already committed by someone else: catch the map up once, with their counts.
  if (mapBehind) await checkpoint.saveProgress(inputs.length, { processed: report.processed });
  return report;
}
