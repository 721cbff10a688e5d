/**
 * A run's log as the worker writes it: the lines a command workflow's program printed and the worker's notes
 * on it (started, stopping, exited, retrying), into the store (lib/store/contract/logs.ts), where the run page,
 * GET /api/v1/runs/{id}/logs and `waybill logs` read them from any machine. The worker's own log has each
 * line too, at debug (LOG_LEVEL); the store is the one place anyone else reads.
 *
 * Never a transaction per line: lines are buffered and written in batches — FLUSH_MS after the first line
 * waiting, at once when MAX_WAITING lines wait, and when the program exits (the command workflow awaits that
 * before its run ends, so a run that is over has its every line stored). One batch at a time per worker.
 *
 * What can be lost: a worker SIGKILLed loses the lines it read since its last batch (FLUSH_MS of them at
 * most). The buffer is bounded: past twice `keep` lines of one run waiting (the store refuses batches, or a
 * program prints faster than batches are written), it keeps that run's newest `keep` — what the store would
 * keep of them anyway — behind a note saying how many it let go; the rest are written once the store answers.
 * Seqs count the lines that reached the store, so lines let go here take none.
 */
import { type Clock, systemClock, type TimerHandle } from '../clock';
import type { LogStore, RunLogInput, RunLogStream } from '../store/contract';
import { DEFAULT_LOG_KEEP } from '../store/shared/log-lines';
import { type Logger, silentLogger } from './log';

/** How long a line may wait for its batch: what a SIGKILL can cost, and how far the run page lags. */
export const FLUSH_MS = 250;
/** Lines waiting that start a batch at once; also the most one transaction writes. */
export const MAX_WAITING = 500;
/** After a refused batch, the next try: the store is down or busy, and the buffer is bounded meanwhile. */
const RETRY_MS = 2000;

/** What a workflow sees of its run's log (RunContext.runLog). */
export interface RunLog {
  /** Adds a line (buffered: it reaches the store within FLUSH_MS). */
  write(stream: RunLogStream, line: string): void;
  /** Resolves once every line written so far was handed to the store (stored, or refused and kept for later). */
  flush(): Promise<void>;
}

/** A run log that keeps nothing: for a RunContext built without a worker. */
export const noRunLog: RunLog = { write: () => undefined, flush: async () => undefined };

export class RunLogWriter {
  private readonly keep: number;
  private readonly clock: Clock;
  private readonly log: Logger;
  private waiting: RunLogInput[] = [];
  /** Lines of each run in `waiting`. */
  private readonly counts = new Map<string, number>();
  /** Lines of each run let go before they were stored (trim()), said in the note in front of the rest. */
  private readonly dropped = new Map<string, number>();
  private timer: TimerHandle | undefined;
  private chain: Promise<void> = Promise.resolve();
  private queued = false;
  /** The notes trim() wrote: not counted as the program's lines when a later trim lets them go. */
  private readonly notes = new WeakSet<RunLogInput>();
  private refusing = false;
  private closed = false;

  constructor(
    private readonly store: LogStore,
    options: { keep?: number; clock?: Clock; log?: Logger } = {},
  ) {
    this.keep = options.keep ?? DEFAULT_LOG_KEEP;
    this.clock = options.clock ?? systemClock;
    this.log = options.log ?? silentLogger;
  }

  /** The run log of one execution of one run. */
  forRun(runId: string, workerId: string, attempt: number): RunLog {
    return {
      write: (stream, line) => this.write({ runId, at: this.clock.now() / 1000, stream, line, workerId, attempt }),
      flush: () => this.flush(),
    };
  }

  write(line: RunLogInput): void {
    this.waiting.push(line);
    const n = (this.counts.get(line.runId) ?? 0) + 1;
    this.counts.set(line.runId, n);
    // Twice the keep before trimming, so a run that prints fast pays the trim once per `keep` lines.
    if (n > 2 * this.keep) this.trim(line.runId);
    if (this.waiting.length >= MAX_WAITING && !this.refusing) void this.flush();
    else this.schedule(this.refusing ? RETRY_MS : FLUSH_MS);
  }

  /** Writes every waiting line, a batch after the other; resolves when done or the store refused one. */
  flush(): Promise<void> {
    this.clock.clearTimeout(this.timer);
    this.timer = undefined;
    // One drain queued behind the one running is enough: it takes every line waiting when it starts.
    if (!this.queued) {
      this.queued = true;
      this.chain = this.chain.then(() => {
        this.queued = false;
        return this.drain();
      });
    }
    return this.chain;
  }

  /** The last flush, at the worker's exit; what the store still refuses then is lost, and said so. */
  async close(): Promise<void> {
    this.closed = true;
    await this.flush();
    this.clock.clearTimeout(this.timer);
    if (this.waiting.length > 0)
      this.log.warn('run log lines not stored: the store refused them until the worker stopped', {
        lines: this.waiting.length,
      });
  }

  private schedule(ms: number): void {
    if (this.timer !== undefined || this.closed) return;
    this.timer = this.clock.setTimeout(
      () => {
        this.timer = undefined;
        void this.flush();
      },
      ms,
      // A worker that is done is not kept alive for its log: close() flushes what waits.
      { keepAlive: false },
    );
  }

  private async drain(): Promise<void> {
    while (this.waiting.length > 0) {
      const batch = this.waiting.splice(0, MAX_WAITING);
      for (const line of batch) this.counts.set(line.runId, this.counts.get(line.runId)! - 1);
      try {
        await this.store.appendRunLogs(batch, { keep: this.keep });
        if (this.refusing) this.log.info('run log lines are stored again', { lines: batch.length });
        this.refusing = false;
      } catch (error) {
        // Back in front, in order; the next try comes after RETRY_MS (or at close).
        this.waiting = [...batch, ...this.waiting];
        for (const line of batch) this.counts.set(line.runId, this.counts.get(line.runId)! + 1);
        if (!this.refusing)
          this.log.warn('could not store run log lines; kept to try again', {
            lines: this.waiting.length,
            error: error instanceof Error ? error.message : String(error),
          });
        this.refusing = true;
        for (const runId of new Set(batch.map((l) => l.runId)))
          if (this.counts.get(runId)! > this.keep) this.trim(runId);
        this.schedule(RETRY_MS);
        return;
      }
    }
    for (const [runId, n] of this.counts) if (n === 0) this.counts.delete(runId);
  }

  /** Lets go of the run's oldest waiting lines, down to `keep` with a note in front saying how many went. */
  private trim(runId: string): void {
    const n = this.counts.get(runId)!;
    // + 1: room for the note; and the newest line always stays (a keep of 1 then holds the note and it a moment).
    let excess = Math.min(n - this.keep + 1, n - 1);
    let total = this.dropped.get(runId) ?? 0;
    const kept: RunLogInput[] = [];
    let first: RunLogInput | undefined;
    for (const line of this.waiting) {
      if (line.runId !== runId) kept.push(line);
      else if (excess > 0) {
        excess--;
        if (!this.notes.has(line)) total++;
      } else {
        if (!first) {
          first = { ...line, stream: 'worker', line: '' };
          this.notes.add(first);
          kept.push(first);
        }
        kept.push(line);
      }
    }
    if (first)
      first.line = `${total.toLocaleString('en-US')} earlier lines were not stored: the program printed them faster than the store took them (the newest ${this.keep.toLocaleString('en-US')} are kept)`;
    this.dropped.set(runId, total);
    this.waiting = kept;
    this.counts.set(runId, kept.filter((l) => l.runId === runId).length);
  }
}
