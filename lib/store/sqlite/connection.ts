/**
 * The SQLite connection every operation file takes: the better-sqlite3 handle and its Drizzle view, the
 * clock, one reusable BEGIN IMMEDIATE wrapper, prepared statements kept per SQL text, and the event insert.
 * Operation files are free functions of this object; nothing inherits from anything.
 *
 * better-sqlite3 is synchronous, so every transaction is a plain function run under BEGIN IMMEDIATE (the
 * write lock taken up front: a deferred transaction that upgrades later fails with SQLITE_BUSY instead of
 * waiting). Nothing awaits inside a transaction; the side effect always runs between two of them.
 */
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import type Database from 'better-sqlite3';
import { DrizzleQueryError } from 'drizzle-orm';
import { type BetterSQLite3Database, drizzle } from 'drizzle-orm/better-sqlite3';
import { type Clock, systemClock } from '../../clock';
import { StoreUnavailableError } from '../../errors';
import type { StepEvent } from '../contract';
import * as schema from '../schema/sqlite';
import { busyTimeoutFor } from '../shared/sqlite-timeouts';
import { openSqliteFile } from './driver';

export interface SqliteOpenOptions {
  /** A file path, or ':memory:'. */
  path: string;
  /** FULL survives power loss; NORMAL survives a killed process only, and is several times faster. */
  synchronous?: 'full' | 'normal';
  /** The write-lock wait; unset, it is derived from `leaseMs` (see shared/sqlite-timeouts.ts). */
  busyTimeoutMs?: number;
  /** The shortest step lease this store will grant (WAYBILL_LEASE_MS); keeps the lock wait inside it. */
  leaseMs?: number;
  clock?: Clock;
  /**
   * Whether a missing file (and its directory) is created. False for a store opened without migrating: a read
   * never creates a store, so a typo in the path is an error rather than a new empty store.
   */
  create?: boolean;
}

export type EventInput = Partial<StepEvent> & Pick<StepEvent, 'runId' | 'outcome'>;

export interface SqliteConnection {
  readonly db: Database.Database;
  /** The same connection through Drizzle's query builder, for the plain reads and writes. */
  readonly orm: BetterSQLite3Database<typeof schema>;
  readonly clock: Clock;
  /** Epoch seconds by the store's clock. */
  now(): number;
  /** Runs fn under BEGIN IMMEDIATE; a throw rolls back. */
  tx<T>(fn: () => T): T;
  /** Write transactions committed through tx() since the connection opened (what group commit saves). */
  readonly committed: { transactions: number };
  /**
   * A prepared statement per SQL text, prepared once per connection. The dashboard's reads are long CTEs:
   * preparing them on every call cost as much as running them (bench/RESULTS.md, "Why the code is shaped so").
   */
  prepared<P extends unknown[] | object = unknown[], R = unknown>(sql: string): Database.Statement<P, R>;
  /** Appends a step event inside the caller's transaction (or on its own). */
  event(e: EventInput, now: number): void;
}

export function openSqliteConnection(options: SqliteOpenOptions): SqliteConnection {
  const create = options.create ?? true;
  if (create && options.path !== ':memory:') mkdirSync(dirname(options.path), { recursive: true });
  const db = openSqliteFile(options.path, {
    timeout: options.busyTimeoutMs ?? busyTimeoutFor(options.leaseMs),
    fileMustExist: !create,
  });
  try {
    db.pragma('journal_mode = WAL');
    // better-sqlite3 leaves WAL databases at NORMAL unless told; FULL is the durable default.
    db.pragma(`synchronous = ${options.synchronous === 'normal' ? 'NORMAL' : 'FULL'}`);
    return connection(db, options.clock ?? systemClock);
  } catch (error) {
    db.close();
    throw error;
  }
}

function connection(db: Database.Database, clock: Clock): SqliteConnection {
  // One transaction wrapper for every write: building one per call would cost on the hot path.
  const immediate = db.transaction((fn: () => unknown) => fn()).immediate;
  // Prepared on first use: the connection exists before the migration that creates step_events.
  let insertEvent: Database.Statement | undefined;
  // Two maps: Drizzle's texts vary with a list's length (inArray), and their turnover must not clear the step
  // protocol's statements, whose texts are constant templates.
  const prepared = keptStatements(db);
  const committed = { transactions: 0 };
  return {
    db,
    orm: drizzle(keepingStatements(db, keptStatements(db)), { schema }),
    clock,
    now: () => clock.now() / 1000,
    tx: <T>(fn: () => T): T => {
      const result = guard(() => immediate(fn) as T);
      committed.transactions += 1;
      return result;
    },
    committed,
    prepared<P extends unknown[] | object = unknown[], R = unknown>(sql: string): Database.Statement<P, R> {
      return prepared(sql) as Database.Statement<P, R>;
    },
    event(e, now) {
      insertEvent ??= db.prepare(`INSERT INTO step_events
        (run_id, idem_key, step, outcome, count, duration_ms, worker_id, detail, at, attempt, max_attempts, retry_at,
          previous_worker_id, previous_attempt)
        VALUES (@runId, @idemKey, @step, @outcome, @count, @durationMs, @workerId, @detail, @now, @attempt,
          @maxAttempts, @retryAt, @previousWorkerId, @previousAttempt)`);
      insertEvent.run({
        idemKey: null,
        step: null,
        count: 1,
        durationMs: null,
        workerId: null,
        detail: null,
        attempt: null,
        maxAttempts: null,
        retryAt: null,
        previousWorkerId: null,
        previousAttempt: null,
        ...e,
        now,
      });
    },
  };
}

/** A statement per SQL text, prepared on first use; the bound keeps a map of varying texts from growing without end. */
function keptStatements(db: Database.Database): (sql: string) => Database.Statement {
  const statements = new Map<string, Database.Statement>();
  return (sql) => {
    let statement = statements.get(sql);
    if (!statement) {
      if (statements.size >= 256) statements.clear();
      statement = db.prepare(sql);
      statements.set(sql, statement);
    }
    return statement;
  };
}

/**
 * The connection as Drizzle sees it: its prepare() answers the statement kept for the text. Drizzle prepares every
 * query it builds anew, and a run page's nine such reads spent more compiling their statements than running them
 * (bench/RESULTS.md). Drizzle switches a statement to arrays (raw) for the queries it maps itself and never back,
 * so a kept statement is handed over in objects mode, as a new one is.
 */
function keepingStatements(db: Database.Database, kept: (sql: string) => Database.Statement): Database.Database {
  const prepare = (sql: string) => {
    const statement = kept(sql);
    if (statement.reader) statement.raw(false);
    return statement;
  };
  return new Proxy(db, {
    get(target, key) {
      if (key === 'prepare') return prepare;
      const value = Reflect.get(target, key, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

/**
 * SQLITE_BUSY after the busy timeout is transient: the caller may retry. Everything else passes through, as
 * better-sqlite3 threw it: Drizzle's DrizzleQueryError wrapper is taken off (its message holds the statement's
 * parameters, which are not for logs or answers, and the driver's `code` is on its cause).
 */
export function guard<T>(fn: () => T): T {
  try {
    return fn();
  } catch (thrown) {
    const error = thrown instanceof DrizzleQueryError && thrown.cause !== undefined ? thrown.cause : thrown;
    const code = (error as { code?: string }).code;
    if (code === 'SQLITE_BUSY' || code === 'SQLITE_LOCKED') {
      throw new StoreUnavailableError(`SQLite is busy (${code}); another process holds the write lock`, error);
    }
    throw error;
  }
}
