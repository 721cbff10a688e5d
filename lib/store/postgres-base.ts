/**
 * What every PostgreSQL operation file shares: the pool, the clock's skew from this host, one retried
 * statement, and a transaction on one pooled connection. The step protocol (postgres.ts), the runs
 * (postgres-runs.ts), prune and the metrics tally all build on it.
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

  /** BEGIN … COMMIT on one pooled connection; a failure rolls back and the connection is not reused. */
  protected async inTransaction<T>(fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    const client = await this.pool.connect();
    // Checked out, the client is not covered by the pool's 'error' listener (see openPostgresStore).
    const ignore = () => undefined;
    client.on('error', ignore);
    let failure: Error | undefined;
    try {
      await client.query('BEGIN');
      const result = await fn(client);
      await client.query('COMMIT');
      return result;
    } catch (error) {
      failure = error instanceof Error ? error : new Error(String(error));
      await client.query('ROLLBACK').catch(() => undefined);
      throw error;
    } finally {
      client.off('error', ignore);
      client.release(failure);
    }
  }
}
