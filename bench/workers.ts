/**
 * The product's worker as a user runs it: `node bin/waybill.mjs --db <url> worker --concurrency N --workflows
 * bench/throughput-workflow.ts`, a real process of its own. Its log (a line a step, on stderr) goes to a pipe,
 * as under a supervisor, and the bench keeps its last lines to say why a worker that died did.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const BIN = fileURLToPath(new URL('../bin/waybill.mjs', import.meta.url));
const WORKFLOWS = fileURLToPath(new URL('./throughput-workflow.ts', import.meta.url));
const ROUND_TRIPS = new URL('./round-trips.mjs', import.meta.url).href;
const TAIL_BYTES = 4096;
const STOP_GRACE_MS = 20_000;

/** The workers not yet exited, for an interrupted bench to kill before it drops their schemas. */
const live = new Set<{ kill(): void; exited: Promise<void> }>();

/** SIGKILLs every worker still running and waits for them to be gone. */
export async function killWorkers(): Promise<void> {
  const all = [...live];
  for (const worker of all) worker.kill();
  await Promise.all(all.map((worker) => worker.exited));
}

// Whatever ends the bench, it leaves no worker behind (an exit handler may only do synchronous work: kill is).
process.once('exit', () => {
  for (const worker of live) worker.kill();
});

export interface WorkerProcess {
  readonly pid: number;
  /** Why the worker is no longer running, or null while it is. */
  exited(): string | null;
  /** Round trips its node-postgres clients have sent (countRoundTrips only). */
  roundTrips(): Promise<number>;
  /** Drains it (SIGTERM: the steps in hand commit, runs are handed back), killing it if that takes too long. */
  stop(): Promise<void>;
}

export function spawnWorker(options: {
  db: string;
  id: string;
  concurrency: number;
  /** Load bench/round-trips.mjs into it, to count what it sends to PostgreSQL. */
  countRoundTrips?: boolean;
}): WorkerProcess {
  const args = [
    ...(options.countRoundTrips ? ['--import', ROUND_TRIPS] : []),
    BIN,
    '--db',
    options.db,
    'worker',
    '--id',
    options.id,
    '--concurrency',
    String(options.concurrency),
    '--workflows',
    WORKFLOWS,
  ];
  const child = spawn(process.execPath, args, {
    cwd: ROOT,
    // SQLite at FULL whatever the caller's environment says: the figure is the durable one.
    env: { ...process.env, WAYBILL_SQLITE_SYNC: 'full', NO_COLOR: '1' },
    stdio: ['ignore', 'ignore', 'pipe', ...(options.countRoundTrips ? (['ipc'] as const) : [])],
  });
  if (child.pid === undefined) throw new Error('the worker process did not start');
  let tail = '';
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => {
    tail = (tail + chunk).slice(-TAIL_BYTES);
  });
  let exit: string | null = null;
  const exited = new Promise<void>((resolve) => {
    child.once('exit', (code, signal) => {
      exit = `worker ${options.id} exited (${signal ?? `code ${code}`}); its last output:\n${tail}`;
      live.delete(handle);
      resolve();
    });
  });
  const handle = { kill: () => child.kill('SIGKILL'), exited };
  live.add(handle);
  const pending: ((count: number) => void)[] = [];
  child.on('message', (message: { roundTrips?: number }) => {
    if (typeof message?.roundTrips === 'number') pending.shift()?.(message.roundTrips);
  });

  return {
    pid: child.pid,
    exited: () => exit,
    roundTrips: () =>
      new Promise<number>((resolve, reject) => {
        if (!child.connected) return reject(new Error(exit ?? `worker ${options.id} does not count round trips`));
        pending.push(resolve);
        child.send('round-trips?');
      }),
    async stop() {
      if (exit !== null) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), STOP_GRACE_MS);
      await exited;
      clearTimeout(timer);
    },
  };
}
