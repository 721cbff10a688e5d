/**
 * Text a step streams of its own while it runs (ctx.stream in a workflow, POST /api/v1/checkpoint/stream from
 * an outside client), kept per attempt so that a step executed again never shows its text twice: the step
 * page shows the newest attempt's chunks, in order. The writer numbers its chunks from 0; seq 0 starts the
 * attempt over (a rerun counts its attempts from 1 again), and a chunk written again under its seq (a retried
 * call) replaces itself.
 */

/** The most characters one chunk may have; a longer text is streamed as several calls. */
export const MAX_STREAM_CHUNK_CHARS = 65_536;

export interface StepStreamChunk {
  runId: string;
  step: number;
  attempt: number;
  seq: number;
  text: string;
}

export interface StepStreamStore {
  /** Stores one chunk (see above); seq 0 deletes the attempt's earlier chunks in the same transaction. */
  appendStepStream(chunk: StepStreamChunk): Promise<void>;
  /** The newest attempt's chunks in seq order; null when the step streamed nothing. */
  readStepStream(runId: string, step: number): Promise<{ attempt: number; chunks: string[] } | null>;
}
