/**
 * Which b-tree each WAL page a 64-run worker writes belongs to: `npx tsx bench/wal-btrees.ts [--runs N]
 * [--seconds S]`. The throughput bench's product phase (one `waybill worker --concurrency N` at FULL on a new
 * file), then a counting window with checkpoints held off (bench/wal.ts); the frames appended meanwhile are read
 * from the `-wal` file and each page number is mapped to its table or index with `dbstat`, read once the worker
 * has stopped (pages allocated in the window keep their b-tree: nothing the loop writes frees a page for long).
 */
import { closeSync, mkdtempSync, openSync, readSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { openSqliteStore } from '../lib/store/sqlite';
import { queueRuns, untilAllRunning } from './throughput-run';
import { THROUGHPUT_WORKFLOW } from './throughput-workflow';
import { walMeter } from './wal';
import { spawnWorker } from './workers';

const arg = (name: string, fallback: number) => {
  const at = process.argv.indexOf(`--${name}`);
  return at < 0 ? fallback : Number(process.argv[at + 1]);
};
const runs = arg('runs', 64);
const seconds = arg('seconds', 3);

async function main() {
  const dir = mkdtempSync(join(tmpdir(), 'waybill-wal-btrees-'));
  const path = join(dir, 'product.db');
  try {
    const store = openSqliteStore({ path, synchronous: 'full' });
    await queueRuns(store, { runs, warmupMs: 0, windowMs: 0, stepsPerRun: 1_000_000 });
    await store.close();
    const reader = new Database(path, { timeout: 5000 });
    const running = reader.prepare<[string], { n: number }>(
      "SELECT count(*) AS n FROM runs WHERE workflow = ? AND status = 'running'",
    );
    const committed = reader.prepare<[], { n: number }>('SELECT count(*) AS n FROM committed');
    const worker = spawnWorker({ db: `file:${path}`, id: `waybill-wal-btrees-${process.pid}`, concurrency: runs });
    let frames: number[];
    let steps: number;
    let commits: number;
    let shm: number;
    try {
      await untilAllRunning(
        () => running.get(THROUGHPUT_WORKFLOW)!.n,
        runs,
        () => worker.exited(),
      );
      await new Promise((resolve) => setTimeout(resolve, 2000));
      const meter = walMeter(path);
      meter.begin();
      // One descriptor for the whole window: closing any descriptor of the -shm file drops this process's
      // locks on it, the meter's read lock among them (POSIX advisory locks are per process).
      shm = openSync(`${path}-shm`, 'r');
      const from = walHeader(shm);
      const before = committed.get()!.n;
      await new Promise((resolve) => setTimeout(resolve, seconds * 1000));
      const after = committed.get()!.n;
      const to = walHeader(shm);
      // Read before the meter lets go: a checkpoint may then start the WAL over. A new salt: it started over at begin.
      frames = pagesOf(path, to.salt === from.salt ? from.frames : 0, to.frames);
      commits = meter.end().commits;
      meter.close();
      closeSync(shm);
      steps = after - before;
    } finally {
      await worker.stop();
      reader.close();
    }
    const db = new Database(path, { readonly: true });
    const owner = new Map<number, { name: string; type: string }>();
    for (const row of db
      .prepare<[], { name: string; pageno: number; pagetype: string }>('SELECT name, pageno, pagetype FROM dbstat')
      .all()) {
      owner.set(row.pageno, { name: row.name, type: row.pagetype });
    }
    db.close();
    const byBtree = new Map<string, { pages: number; leaf: number; internal: number; overflow: number }>();
    for (const page of frames) {
      const o = owner.get(page) ?? { name: page === 1 ? 'header (page 1)' : 'free or unknown', type: '' };
      const b = byBtree.get(o.name) ?? { pages: 0, leaf: 0, internal: 0, overflow: 0 };
      b.pages++;
      if (o.type === 'leaf') b.leaf++;
      else if (o.type === 'internal') b.internal++;
      else if (o.type === 'overflow') b.overflow++;
      byBtree.set(o.name, b);
    }
    const per = (n: number) => (n / steps).toFixed(3);
    process.stdout.write(
      `${runs} runs, ${steps} steps, ${commits} commits (${(steps / commits).toFixed(1)} steps a commit), ` +
        `${frames.length} frames: ${per(frames.length)} a step\n`,
    );
    for (const [name, b] of [...byBtree].sort((x, y) => y[1].pages - x[1].pages)) {
      process.stdout.write(
        `  ${name.padEnd(34)} ${per(b.pages)}  (leaf ${per(b.leaf)}, internal ${per(b.internal)}, overflow ${per(b.overflow)})\n`,
      );
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The wal-index header's last valid frame and salt (bench/wal.ts reads it with its consistency check). */
function walHeader(shm: number): { frames: number; salt: number } {
  const buffer = Buffer.alloc(48);
  readSync(shm, buffer, 0, 48, 0);
  return { frames: buffer.readUInt32LE(16), salt: buffer.readUInt32BE(32) };
}

/** The page number of each frame in (from, to]. */
function pagesOf(path: string, from: number, to: number): number[] {
  const fd = openSync(`${path}-wal`, 'r');
  try {
    const head = Buffer.alloc(32);
    readSync(fd, head, 0, 32, 0);
    const pageSize = head.readUInt32BE(8);
    const frame = Buffer.alloc(24);
    const pages: number[] = [];
    for (let i = from; i < to; i++) {
      readSync(fd, frame, 0, 24, 32 + i * (pageSize + 24));
      pages.push(frame.readUInt32BE(0));
    }
    return pages;
  } finally {
    closeSync(fd);
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
