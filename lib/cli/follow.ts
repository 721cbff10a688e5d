/**
 * Watching runs move: `start --follow` follows one run until it ends, `worker` shows the runs it holds.
 * On a terminal a bar is redrawn in place; elsewhere (a pipe, a log file) a line every few seconds.
 * Both only read the store: the worker's progress is whatever its last commit wrote.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { readRunFigures, runFigures } from '../control/figures';
import type { Logger } from '../engine/log';
import { NotFoundError } from '../errors';
import type { RunRow, RunStore, Store } from '../store/contract';
import type { Cli } from './context';
import { LiveBlock, progressBar } from './format';

const FINAL = new Set(['completed', 'failed', 'cancelled', 'rejected']);
const LINE_EVERY_MS = 3000;

/** Follows a run until it completes, fails, is cancelled or rejected (a waiting run is followed on: it is not over); null when the user pressed Ctrl-C first. */
export async function followRun(cli: Cli, store: Store & RunStore, runId: string): Promise<RunRow | null> {
  const live = cli.tty ? new LiveBlock(cli.stderr) : null;
  const interrupted = new AbortController();
  const onSigint = () => interrupted.abort();
  process.once('SIGINT', onSigint);
  let printed = { at: 0, status: '' };
  try {
    for (;;) {
      const run = await store.getRun(runId);
      if (!run) throw new NotFoundError(`run ${runId}`);
      const figures = await readRunFigures(store, run, await store.loadProgress(runId));
      const line = `${run.id}  ${run.status.padEnd(9)}  ${progressBar(figures)}`;
      if (live) live.update([line]);
      else if (run.status !== printed.status || Date.now() - printed.at >= LINE_EVERY_MS) {
        cli.err(line);
        printed = { at: Date.now(), status: run.status };
      }
      if (FINAL.has(run.status)) return run;
      await sleep(live ? 200 : 500, undefined, { signal: interrupted.signal }).catch(() => {});
      if (interrupted.signal.aborted) return null;
    }
  } finally {
    live?.done();
    process.off('SIGINT', onSigint);
  }
}

/**
 * Shows the runs a worker holds, until stopped: bars on a terminal (log lines are printed above them
 * through `write`), a `progress` log line per run every few seconds elsewhere.
 */
export function watchWorker(
  cli: Cli,
  store: Store & RunStore,
  workerId: string,
  log: Logger,
  live: LiveBlock | null,
): () => Promise<void> {
  const stop = new AbortController();
  const loop = async () => {
    while (!stop.signal.aborted) {
      try {
        const held = await store.listRuns({
          status: 'running',
          owner: workerId,
          limit: 100,
          claimTtlMs: cli.config().WAYBILL_CLAIM_TTL_MS,
        });
        if (live) live.update(held.map((r) => `${r.id}  ${progressBar(runFigures(r))}`));
        else
          for (const r of held)
            log.info('progress', { runId: r.id, workflow: r.workflow, step: r.step, totalSteps: r.totalSteps });
      } catch (error) {
        log.warn('could not read progress', { error: String(error) });
      }
      await sleep(live ? 500 : LINE_EVERY_MS, undefined, { signal: stop.signal }).catch(() => {});
    }
  };
  const running = loop();
  /** Stops watching; resolves once no read is in flight, so the store can be closed. */
  return async () => {
    stop.abort();
    await running;
    live?.update([]);
  };
}
