/**
 * SQLite throughput: 64 runs of zero-cost steps in one `waybill worker --concurrency 64` at synchronous FULL,
 * beside its floor, measured in the same run: 64 loops in one process on one bare better-sqlite3 connection
 * to a file with the product's schema and pragmas, each step one INSERT that is its own transaction.
 *
 * What a step appends to the WAL (bench/wal.ts) is counted apart: right after each timed window, with the same
 * load still running, a short counting window holds checkpoints off and reads the WAL's counters; the timed
 * window keeps its checkpoints, so its rate is what it was. Only that window's per-step WAL figures are kept.
 */
import { join } from 'node:path';
import { setImmediate as yieldTurn } from 'node:timers/promises';
import Database from 'better-sqlite3';
import { stepKey } from '../lib/checkpoint';
import { openSqliteStore } from '../lib/store/sqlite';
import { committedRun } from '../lib/store/sqlite/committed-rows';
import { queueRuns, runIds, type Throughput, type ThroughputOptions, untilAllRunning } from './throughput-run';
import { walMeter } from './wal';
import { measureWindow, type WindowFigure, type WindowOptions } from './window';
import { spawnWorker } from './workers';

/** The counting window after each timed one (or the timed one's length, when shorter). */
export const COUNT_WINDOW_MS = 2000;

export async function throughputSqlite(options: ThroughputOptions & { dir: string }): Promise<Throughput> {
  const floor = await sqliteFloor(join(options.dir, 'throughput-floor.db'), options);
  const product = await sqliteProduct(join(options.dir, 'throughput-product.db'), options);
  return { product, floor };
}

/**
 * The product's window on the store at `path`, which may hold other rows (bench/grown.ts): its own runs are
 * `${prefix}-0`…, and only their rows are counted, so a store's size is not in the count's cost.
 */
export async function sqliteProduct(path: string, options: ThroughputOptions, prefix?: string): Promise<WindowFigure> {
  const store = openSqliteStore({ path, synchronous: 'full' });
  try {
    await queueRuns(store, options, prefix);
  } finally {
    await store.close();
  }
  const ids = runIds(options, prefix);
  const list = ids.map(() => '?').join(', ');
  const reader = new Database(path, { timeout: 5000 });
  const running = reader.prepare<string[], { n: number }>(
    `SELECT count(*) AS n FROM runs WHERE id IN (${list}) AND status = 'running'`,
  );
  // Both halves of the run index (committedRun): `run_id IN (…)` alone would scan the table at every sample.
  const committed = reader.prepare<string[], { n: number }>(
    `SELECT count(*) AS n FROM committed WHERE ${committedRun(`IN (${list})`)}`,
  );
  const worker = spawnWorker({
    db: `file:${path}`,
    id: `waybill-tp-${process.pid}-sqlite${prefix ? `-${prefix}` : ''}`,
    concurrency: options.runs,
  });
  try {
    await untilAllRunning(
      () => running.get(...ids)!.n,
      options.runs,
      () => worker.exited(),
    );
    const window = {
      committed: () => committed.get(...ids, ...ids)!.n,
      // The bench itself reads the worker's log and counts rows meanwhile: its CPU is on the same cores.
      processes: () => ({ worker: [worker.pid], bench: [process.pid] }),
      disk: path,
      check: () => {
        const died = worker.exited();
        if (died) throw new Error(died);
        const n = running.get(...ids)!.n;
        if (n !== options.runs) throw new Error(`only ${n} of ${options.runs} runs are running: raise stepsPerRun`);
      },
    };
    const timed = await measureWindow({ ...window, warmupMs: options.warmupMs, windowMs: options.windowMs });
    return await withWalCounted(timed, path, window, options);
  } finally {
    await worker.stop();
    reader.close();
  }
}

/**
 * The floor: `runs` loops on one connection, each step one INSERT of a committed row in its own (autocommit)
 * transaction at FULL. better-sqlite3 is synchronous, so the loops take turns: each step yields to the event
 * loop (which also lets the window's timers fire) and then commits.
 */
async function sqliteFloor(path: string, options: ThroughputOptions): Promise<WindowFigure> {
  await openSqliteStore({ path, synchronous: 'full' }).close();
  const db = new Database(path, { timeout: 5000 });
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = FULL');
  const insert = db.prepare('INSERT INTO committed (idem_key, run_id, result_json, committed_at) VALUES (?, ?, ?, ?)');
  let committed = 0;
  let stop = false;
  const loop = async (runId: string) => {
    for (let step = 0; !stop; step++) {
      await yieldTurn();
      insert.run(stepKey(runId, step), runId, JSON.stringify(step), Date.now() / 1000);
      committed++;
    }
  };
  const loops = Array.from({ length: options.runs }, (_, i) => loop(`floor-${i}`));
  try {
    const window = { committed: () => committed, processes: () => ({ bench: [process.pid] }), disk: path };
    const timed = await measureWindow({ ...window, warmupMs: options.warmupMs, windowMs: options.windowMs });
    return await withWalCounted(timed, path, window, options);
  } finally {
    stop = true;
    await Promise.all(loops);
    db.close();
  }
}

/**
 * The timed window's figure, with what a committed step appended to the WAL of `path` (pages and commits; at
 * FULL each commit is one fsync) read over a counting window of its own, run right after on the same load.
 */
async function withWalCounted(
  timed: WindowFigure,
  path: string,
  window: Pick<WindowOptions, 'committed' | 'processes' | 'disk' | 'check'>,
  options: ThroughputOptions,
): Promise<WindowFigure> {
  const meter = walMeter(path);
  try {
    const counting = await measureWindow({
      ...window,
      warmupMs: 0,
      windowMs: Math.min(COUNT_WINDOW_MS, options.windowMs),
      counted: {
        begin: () => meter.begin(),
        end: () => {
          const { pages, commits } = meter.end();
          return { walPages: pages, commits, fsyncs: commits };
        },
      },
    });
    return {
      ...timed,
      countedPerStep: counting.countedPerStep,
      countedOver: { steps: counting.steps, seconds: counting.seconds },
    };
  } finally {
    meter.close();
  }
}
