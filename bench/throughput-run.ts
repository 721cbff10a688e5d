/**
 * What both backends' throughput phases share: their options and result, the runs they queue and the wait
 * for the workers to have taken all of them.
 */
import { THROUGHPUT_WORKFLOW } from './throughput-workflow';
import type { WindowFigure } from './window';

export interface ThroughputOptions {
  runs: number;
  warmupMs: number;
  windowMs: number;
  /** Steps each run has: enough that none ends before the window does. */
  stepsPerRun: number;
}

/** The product and its floor, each measured over its own window. */
export interface Throughput {
  product: WindowFigure;
  floor: WindowFigure;
}

/** The ids of the runs queueRuns queues under `prefix`. */
export const runIds = (options: Pick<ThroughputOptions, 'runs'>, prefix = 'throughput'): string[] =>
  Array.from({ length: options.runs }, (_, i) => `${prefix}-${i}`);

/** The runs the workers will take, queued before any worker starts: `${prefix}-0`…. */
export async function queueRuns(
  store: {
    createRun(run: { id: string; workflow: string; inputJson: string; totalSteps: number | null }): Promise<unknown>;
  },
  options: ThroughputOptions,
  prefix = 'throughput',
): Promise<void> {
  for (const id of runIds(options, prefix)) {
    await store.createRun({
      id,
      workflow: THROUGHPUT_WORKFLOW,
      inputJson: JSON.stringify({ steps: options.stepsPerRun }),
      totalSteps: options.stepsPerRun,
    });
  }
}

/** Waits until the workers have taken every run; the warm-up starts from there. */
export async function untilAllRunning(
  running: () => number | Promise<number>,
  runs: number,
  died: () => string | null,
): Promise<void> {
  const deadline = Date.now() + 120_000;
  for (;;) {
    const why = died();
    if (why) throw new Error(why);
    if ((await running()) === runs) return;
    if (Date.now() > deadline) throw new Error(`the workers took only ${await running()} of ${runs} runs in 120 s`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
