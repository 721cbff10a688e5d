/**
 * The article's agent loop: read to start, run each step once, advance the map. The map is written in the
 * same transaction as each step's commit, so an executed step costs one transaction after its claim; a
 * skipped step costs none, its count riding with the next write.
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
  for (let step = start; step < inputs.length; step++) {
    const item = inputs[step] as I;
    const { status } = await checkpoint.runOnce(stepKey(checkpoint.runId, step), (ctx) => handler(item, ctx as AgentStepContext), {
      step,
      signal: options.signal,
      progress: { step: step + 1, state: { processed: report.processed + 1 } },
    });
    report[status]++;
    if (status === 'executed') report.processed++;
    mapBehind = status !== 'executed';
  }
  // The last steps were already committed by someone else: catch the map up once, with their counts.
  if (mapBehind) await checkpoint.saveProgress(inputs.length, { processed: report.processed });
  return report;
}
