/**
 * ctx.stream: a step's own text, appended to its transcript in the store as it runs (contract/step-streams.ts)
 * and shown growing on its step page. Chunks are numbered per attempt from 0 and written in call order, one
 * after the other, so a caller that does not await each still gets them in order; awaiting one means it and
 * every chunk before it are stored.
 */
import type { StepContext } from '../checkpoint/checkpoint';
import { InvalidInputError } from '../errors';
import type { StepStreamStore } from '../store/contract';
import type { UsageStepContext } from './step-usage';

/** What a workflow's step is handed: the checkpoint's step context, its stream, and its usage reports (step-usage.ts). */
export interface StreamingStepContext extends StepContext, UsageStepContext {
  /** Appends `text` to the step's transcript, durably; the newest attempt's transcript is the one shown. */
  stream(text: string): Promise<void>;
}

export function streamingStep<C extends StepContext>(
  call: C,
  runId: string,
  store: StepStreamStore | undefined,
): C & Pick<StreamingStepContext, 'stream'> {
  let seq = 0;
  let last: Promise<void> = Promise.resolve();
  const stream = (text: string): Promise<void> => {
    if (!store)
      return Promise.reject(new Error('this run context cannot stream: it was built without a store to stream to'));
    if (call.step === undefined)
      return Promise.reject(
        new InvalidInputError(
          `ctx.stream needs the step's number to show it on its page: ctx.step(name, fn, { step: n }) (key ${call.idempotencyKey})`,
        ),
      );
    if (typeof text !== 'string') return Promise.reject(new InvalidInputError('ctx.stream takes a string'));
    if (text === '') return last;
    const chunk = { runId, step: call.step, attempt: call.attempt, seq: seq++, text };
    // A failed write fails its own call; the next is still written (its seq stays its own).
    const write = last.catch(() => undefined).then(() => store.appendStepStream(chunk));
    last = write;
    return write;
  };
  return Object.assign(call, { stream });
}
