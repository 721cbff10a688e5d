/**
 * Run logs: the lines a command workflow's program printed, written by the worker that ran it and read by
 * whoever shows them (the run page, the API, `waybill logs`) — on any machine, as the store is the one place
 * both reach. Bounded twice: each line (shared/log-lines.ts) and the lines kept per run.
 */
import type { RunLogRow, RunLogStream } from './rows';

export interface RunLogInput {
  runId: string;
  /** Epoch seconds: when the line was read, not when it is written (lines are written in batches). */
  at: number;
  stream: RunLogStream;
  /** Cut to MAX_LOG_LINE_CHARS with a marker saying how much was cut (shared/log-lines.ts). */
  line: string;
  workerId?: string | null;
  attempt?: number | null;
}

export interface LogStore {
  /**
   * Appends lines, in order, in one transaction: each run's lines take the next seqs of that run, then the run
   * keeps only its last `keep` lines (one range delete on the key). Appends to one run from two writers at once
   * are serialized, so seqs never repeat and a reader that saw seq n has seen every kept line before it.
   */
  appendRunLogs(lines: RunLogInput[], options: { keep: number }): Promise<void>;

  /**
   * A run's lines, oldest first: with `afterSeq`, the first `limit` after it (a follower's next page); without,
   * the last `limit` (the tail). None for a run that printed nothing, or does not exist.
   */
  readRunLogs(runId: string, options: { afterSeq?: number; limit: number }): Promise<RunLogRow[]>;
}
