/**
 * Runs the real `waybill` CLI as a process against a SQLite file in the test's temp dir, and reads that
 * file directly to compare it before and after a command.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { tempDir } from '../support/tmp';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));
export const BIN = fileURLToPath(new URL('../../bin/waybill.mjs', import.meta.url));

export interface Result {
  code: number | null;
  stdout: string;
  stderr: string;
}

export interface Db {
  dir: string;
  url: string;
  /** `waybill --db <this file> …args` as a process. */
  cli(args: string[], options?: { env?: Record<string, string>; input?: string }): Promise<Result>;
  /** Every table's rows, in a stable order: equal dumps mean nothing was written. */
  dump(): Record<string, unknown[]>;
  /** A direct connection, as an outside client (the article's Python class) would have. */
  raw<T>(fn: (db: Database.Database) => T): T;
}

export function runCli(
  args: string[],
  options: { env?: Record<string, string>; input?: string; cwd?: string; timeoutMs?: number } = {},
): Promise<Result> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], {
      cwd: options.cwd ?? ROOT,
      env: { ...process.env, ...options.env },
      stdio: ['pipe', 'pipe', 'pipe'],
      // Killed after it, for a command that would otherwise serve until stopped.
      ...(options.timeoutMs === undefined ? {} : { timeout: options.timeoutMs, killSignal: 'SIGKILL' as const }),
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (c: string) => (stdout += c));
    child.stderr.setEncoding('utf8').on('data', (c: string) => (stderr += c));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(options.input ?? '');
  });
}

/** A fresh database file (created by `waybill migrate`) in a temp dir removed after the test. */
export async function freshDb(): Promise<Db> {
  const dir = tempDir('waybill-cli-');
  const file = dir.file('w.db');
  const db: Db = {
    dir: dir.path,
    url: `file:${file}`,
    // DATABASE_URL names another file: --db must win (the tests check env.db is never created).
    cli: (args, options) =>
      runCli(['--db', `file:${file}`, ...args], {
        ...options,
        env: { DATABASE_URL: `file:${dir.file('env.db')}`, ...options?.env },
      }),
    dump() {
      return db.raw((conn) => {
        const tables = conn
          .prepare<[], { name: string }>(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name",
          )
          .all();
        return Object.fromEntries(
          tables.map(({ name }) => [name, conn.prepare(`SELECT * FROM "${name}" ORDER BY rowid`).all()]),
        );
      });
    },
    raw(fn) {
      const conn = new Database(file);
      try {
        return fn(conn);
      } finally {
        conn.close();
      }
    },
  };
  // Created as a deploy step would (`waybill migrate`): the read-only commands under test create nothing.
  const first = await db.cli(['migrate']);
  if (first.code !== 0) throw new Error(`could not create the database: ${first.stderr}`);
  return db;
}

/** Parses stdout as exactly one JSON document. */
// biome-ignore lint/suspicious/noExplicitAny: as with JSON.parse, a test reads the fields it asserts on without declaring the whole document (about 20 call sites in 9 test files do); pass T to check a shape
export function json<T = any>(result: Result): T {
  if (result.code !== 0) throw new Error(`exit ${result.code}: ${result.stderr}`);
  return JSON.parse(result.stdout) as T;
}

/** The article's client writing a run directly: progress, committed rows, and a claim with no lease. */
export function insertOutsideRun(db: Db, runId: string, options: { claimAgeS: number }): void {
  const now = Date.now() / 1000;
  db.raw((conn) => {
    conn
      .prepare('INSERT INTO progress(run_id, step, state_json, updated_at) VALUES (?, ?, ?, ?)')
      .run(runId, 2, JSON.stringify({ done: 2 }), now - 60);
    for (const step of [0, 1]) {
      conn
        .prepare('INSERT INTO committed(idem_key, run_id, result_json, committed_at) VALUES (?, ?, ?, ?)')
        .run(`${runId}:step:${step}`, runId, JSON.stringify({ ok: step }), now - 90 + step);
    }
    conn
      .prepare('INSERT INTO claims(idem_key, run_id, claimed_at) VALUES (?, ?, ?)')
      .run(`${runId}:step:2`, runId, now - options.claimAgeS);
  });
}
