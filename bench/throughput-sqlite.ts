/**
 * SQLite throughput: 64 runs of zero-cost steps in one `waybill worker --concurrency 64` at synchronous FULL,
 * beside its floor, measured in the same run: 64 loops in one process on one bare better-sqlite3 connection
 * to a file with the product's schema and pragmas, each step one INSERT that is its own transaction.
 *
 * Both windows count what they appended to the WAL (bench/wal.ts), which holds checkpoints off for the window:
 * its rate is of commits without them.
 */
import { join } from 'node:path';
import { setImmediate as yieldTurn } from 'node:timers/promises';
import Database from 'better-sqlite3';
import { stepKey } from '../lib/checkpoint';
import { openSqliteStore } from '../lib/store/sqlite';
import { queueRuns, type Throughput, type ThroughputOptions, untilAllRunning } from './throughput-run';
import { THROUGHPUT_WORKFLOW } from './throughput-workflow';
import { walMeter } from './wal';
import { measureWindow, type WindowFigure } from './window';
import { spawnWorker } from './workers';

export async function throughputSqlite(options: ThroughputOptions & { dir: string }): Promise<Throughput> {
  const floor = await sqliteFloor(join(options.dir, 'throughput-floor.db'), options);
  const product = await sqliteProduct(join(options.dir, 'throughput-product.db'), options);
  return { product, floor };
}

async function sqliteProduct(path: string, options: ThroughputOptions): Promise<WindowFigure> {
  const store = openSqliteStore({ path, synchronous: 'full' });
  try {
    await queueRuns(store, options);
  } finally {
    await store.close();
  }
  const reader = new Database(path, { timeout: 5000 });
  const running = reader.prepare<[string], { n: number }>(
    "SELECT count(*) AS n FROM runs WHERE workflow = ? AND status = 'running'",
  );
  const committed = reader.prepare<[], { n: number }>('SELECT count(*) AS n FROM committed');
  const worker = spawnWorker({ db: `file:${path}`, id: `waybill-tp-${process.pid}-sqlite`, concurrency: options.runs });
  const wal = walCounted(path);
  try {
    await untilAllRunning(
      () => running.get(THROUGHPUT_WORKFLOW)!.n,
      options.runs,
      () => worker.exited(),
    );
    return await measureWindow({
      warmupMs: options.warmupMs,
      windowMs: options.windowMs,
      committed: () => committed.get()!.n,
      // The bench itself reads the worker's log and counts rows meanwhile: its CPU is on the same cores.
      processes: () => ({ worker: [worker.pid], bench: [process.pid] }),
      disk: path,
      counted: wal,
      check: () => {
        const died = worker.exited();
        if (died) throw new Error(died);
        const n = running.get(THROUGHPUT_WORKFLOW)!.n;
        if (n !== options.runs) throw new Error(`only ${n} of ${options.runs} runs are running: raise stepsPerRun`);
      },
    });
  } finally {
    wal.close();
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
  const wal = walCounted(path);
  try {
    return await measureWindow({
      warmupMs: options.warmupMs,
      windowMs: options.windowMs,
      committed: () => committed,
      processes: () => ({ bench: [process.pid] }),
      disk: path,
      counted: wal,
    });
  } finally {
    wal.close();
    stop = true;
    await Promise.all(loops);
    db.close();
  }
}

/** Pages and commits appended to the WAL of `path` over the window; at FULL each commit is one fsync. */
function walCounted(path: string) {
  const meter = walMeter(path);
  return {
    begin: () => meter.begin(),
    end: () => {
      const { pages, commits } = meter.end();
      return { walPages: pages, commits, fsyncs: commits };
    },
    close: () => meter.close(),
  };
}
