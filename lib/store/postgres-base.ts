/**
 * What every PostgreSQL operation file shares: the pool, the clock's skew from this host, and one
 * retried statement. The step protocol (postgres.ts) and the runs (postgres-runs.ts) both build on it.
 */
import type pg from 'pg';
import { systemClock, type Clock } from '../clock';
import { withRetry } from './postgres-retry';

export abstract class PostgresBase {
  constructor(readonly pool: pg.Pool, protected readonly clock: Clock) {}

  /** Seconds the injected clock is ahead of this host's: added to the database clock in every statement. */
  protected skew(): number {
    return this.clock === systemClock ? 0 : (this.clock.now() - Date.now()) / 1000;
  }

  /** One statement, retried while transient; name makes it a prepared statement on each connection. */
  protected async query<R extends pg.QueryResultRow>(name: string | undefined, text: string, values: unknown[]): Promise<pg.QueryResult<R>> {
    return withRetry(name ?? 'query', () => this.pool.query<R>({ name, text, values }));
  }
}
