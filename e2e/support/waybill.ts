/**
 * The world outside the browser: real `waybill worker` processes against the suite's database (killed with
 * real signals), the `waybill` CLI for setup the test is not about, and a read-only look at the SQLite file
 * to check what the pages claim.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const BIN = fileURLToPath(new URL('../../bin/waybill.mjs', import.meta.url));

export const databaseUrl = (): string => {
  const url = process.env.WAYBILL_E2E_DATABASE_URL;
  if (!url) throw new Error('WAYBILL_E2E_DATABASE_URL is not set: run the suite through playwright.config.ts');
  return url;
};

/** Short leases so an orphaned claim shows within seconds; a fast heartbeat so takeovers are prompt. */
// A claim lease well above SQLite's 5 s busy timeout, yet short, so orphans show soon.
const WORKER_ENV = { WAYBILL_LEASE_MS: '7500', WAYBILL_HEARTBEAT_MS: '200' };

export interface WorkerProcess {
  readonly pid: number;
  /** Everything it wrote to stderr (its JSON log lines). */
  log(): string;
  signal(signal: NodeJS.Signals): void;
  /** SIGKILL, and wait until it is gone. */
  killHard(): Promise<void>;
  /** SIGTERM (drain), and wait until it has exited. */
  stop(): Promise<void>;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** Starts `waybill worker` (serving a workflow module too, if given) and resolves once it has registered with the store. */
export async function startWorker(name: string, options: { workflows?: string } = {}): Promise<WorkerProcess> {
  const args = ['worker', '--id', name, ...(options.workflows ? ['--workflows', options.workflows] : [])];
  const proc: ChildProcess = spawn(process.execPath, [BIN, ...args], {
    cwd: ROOT,
    env: { ...process.env, ...WORKER_ENV, DATABASE_URL: databaseUrl() },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let err = '';
  proc.stderr!.setEncoding('utf8').on('data', (chunk: string) => (err += chunk));
  const exited = once(proc, 'close').then(([code, signal]) => ({
    code: code as number | null,
    signal: signal as NodeJS.Signals | null,
  }));
  let gone = false;
  void exited.then(() => (gone = true));
  const worker: WorkerProcess = {
    pid: proc.pid!,
    log: () => err,
    signal: (signal) => void (gone || proc.kill(signal)),
    async killHard() {
      worker.signal('SIGKILL');
      await exited;
    },
    async stop() {
      worker.signal('SIGTERM');
      await exited;
    },
    exited,
  };
  live.add(worker);
  void exited.then(() => live.delete(worker));
  const started = Date.now();
  while (!err.includes('"worker started"')) {
    if (gone) throw new Error(`worker ${name} exited before it started:\n${err}`);
    if (Date.now() - started > 30_000) throw new Error(`worker ${name} did not start within 30 s:\n${err}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  return worker;
}

const live = new Set<WorkerProcess>();

/** Kills every worker a test left running, so none outlives its test. */
export async function killLeftoverWorkers(): Promise<void> {
  await Promise.all([...live].map((w) => w.killHard()));
}

/** `waybill <args>` against the suite's database; throws with its stderr unless it exits 0. */
export async function waybill(args: string[]): Promise<string> {
  const proc = spawn(process.execPath, [BIN, '--db', databaseUrl(), ...args], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  proc.stdout.setEncoding('utf8').on('data', (c: string) => (out += c));
  proc.stderr.setEncoding('utf8').on('data', (c: string) => (err += c));
  const [code] = await once(proc, 'close');
  if (code !== 0) throw new Error(`waybill ${args.join(' ')} exited ${code}: ${err}`);
  return out;
}

/** Queues a run through the CLI (for tests about something else than the start form). */
export async function queueRun(id: string, workflow: string, input: unknown): Promise<void> {
  await waybill(['start', workflow, '--id', id, '--input', JSON.stringify(input)]);
}

/** Reads the database file directly, read-only, as an outside observer. */
export function readDb<T>(fn: (db: Database.Database) => T): T {
  const db = new Database(databaseUrl().slice('file:'.length), { readonly: true, fileMustExist: true });
  try {
    return fn(db);
  } finally {
    db.close();
  }
}

export const countRuns = (): number =>
  readDb((db) => (db.prepare('SELECT count(*) AS n FROM runs').get() as { n: number }).n);

export const runExists = (id: string): boolean =>
  readDb((db) => db.prepare('SELECT 1 FROM runs WHERE id = ?').get(id) !== undefined);

export const claimsOf = (runId: string): string[] =>
  readDb((db) =>
    (
      db.prepare('SELECT idem_key FROM claims WHERE run_id = ? ORDER BY idem_key').all(runId) as { idem_key: string }[]
    ).map((r) => r.idem_key),
  );

/**
 * SIGKILLs a worker while it holds a claim on the run, so the claim is certainly orphaned: the worker is
 * frozen with SIGSTOP, the store is checked for its claim, and only then is it killed (else it is let go
 * for a moment and frozen again). A kill that lands between a commit and the next claim would orphan nothing.
 */
export async function killMidStep(worker: WorkerProcess, runId: string): Promise<string> {
  for (let attempt = 0; attempt < 100; attempt++) {
    worker.signal('SIGSTOP');
    const [key] = claimsOf(runId);
    if (key !== undefined) {
      await worker.killHard();
      return key;
    }
    worker.signal('SIGCONT');
    await new Promise((r) => setTimeout(r, 37));
  }
  throw new Error(`worker ${worker.pid} never held a claim on ${runId}`);
}

/** Cancels every run that is not finished, so no test's leftovers are picked up by the next test's worker. */
export async function cancelUnfinishedRuns(): Promise<void> {
  const ids = readDb((db) =>
    (db.prepare("SELECT id FROM runs WHERE status IN ('queued', 'running', 'paused')").all() as { id: string }[]).map(
      (r) => r.id,
    ),
  );
  for (const id of ids) await waybill(['cancel', id]).catch(() => {});
}

/** Whether a process with this pid still exists (signal 0 checks without sending anything). */
export function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
