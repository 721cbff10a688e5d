/**
 * What every SQLite operation file shares: the connection, the clock, one reusable BEGIN IMMEDIATE
 * wrapper, and the event insert.
 */
import type Database from 'better-sqlite3';
import type { Clock } from '../clock';
import { StoreUnavailableError } from '../errors';
import type { StepEvent } from './types';

export abstract class SqliteBase {
  private readonly immediate: (fn: () => unknown) => unknown;
  private readonly insertEvent: Database.Statement;
  private readonly statements = new Map<string, Database.Statement>();

  constructor(readonly db: Database.Database, protected readonly clock: Clock) {
    // One transaction wrapper for every write: building one per call would cost on the hot path.
    this.immediate = db.transaction((fn: () => unknown) => fn()).immediate;
    this.insertEvent = db.prepare(`INSERT INTO step_events
      (run_id, idem_key, step, outcome, count, duration_ms, worker_id, detail, at)
      VALUES (@runId, @idemKey, @step, @outcome, @count, @durationMs, @workerId, @detail, @now)`);
  }

  /**
   * A prepared statement per SQL text, prepared once per connection. The dashboard's reads are long CTEs:
   * preparing them on every call cost as much as running them (≈ 3 ms a runs page, measured). Every text
   * passed here is a constant template; the bound keeps a mistake from growing the map without end.
   */
  protected prepared<P extends unknown[] | {} = unknown[], R = unknown>(sql: string): Database.Statement<P, R> {
    let statement = this.statements.get(sql);
    if (!statement) {
      if (this.statements.size >= 256) this.statements.clear();
      statement = this.db.prepare(sql);
      this.statements.set(sql, statement);
    }
    return statement as Database.Statement<P, R>;
  }

  protected now(): number {
    return this.clock.now() / 1000;
  }

  /** Runs fn under BEGIN IMMEDIATE; a throw rolls back. */
  protected tx<T>(fn: () => T): T {
    return guard(() => this.immediate(fn) as T);
  }

  protected event(e: Partial<StepEvent> & Pick<StepEvent, 'runId' | 'outcome'>, now: number): void {
    this.insertEvent.run({ idemKey: null, step: null, count: 1, durationMs: null, workerId: null, detail: null, ...e, now });
  }
}

/** SQLITE_BUSY after the busy timeout is transient: the caller may retry. Everything else passes through. */
export function guard<T>(fn: () => T): T {
  try {
    return fn();
  } catch (error) {
    const code = (error as { code?: string }).code;
    if (code === 'SQLITE_BUSY' || code === 'SQLITE_LOCKED') {
      throw new StoreUnavailableError(`SQLite is busy (${code}); another process holds the write lock`, error);
    }
    throw error;
  }
}
