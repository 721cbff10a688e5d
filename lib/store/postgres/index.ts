/**
 * The PostgreSQL backend: how Waybill scales past one machine, many workers on many hosts against one
 * database. Same file names as sqlite/, same composition: one object of the operation files, each a function
 * of the connection, no chain of classes.
 */
import type pg from 'pg';
import { systemClock, type Clock } from '../../clock';
import { findMigrationsDir, readMigrations } from '../migrations';
import type { Store } from '../types';
import { postgresAudit } from './audit';
import { postgresClaims } from './claims';
import { openPool, postgresConnection, type PostgresOpenOptions } from './connection';
import { postgresLogs } from './logs';
import { postgresMetrics } from './metrics';
import { migratePostgres } from './migrate';
import { postgresModelCalls } from './model-calls';
import { wakeListener } from './notify';
import { postgresReads } from './reads';
import { postgresRetention } from './retention';
import { postgresRewind } from './rewind';
import { withRetry } from './retry';
import { postgresRuns } from './runs';
import { postgresSteps } from './steps';
import { postgresWorkers } from './workers';
import { postgresWaits } from './waits';
import { postgresWorkflows } from './workflows';

export interface PostgresStoreOptions extends PostgresOpenOptions {
  /**
   * Group commit (lib/store/group-commit.ts): the commits, or the claims, that this process's runs have ready
   * at the same moment go to the server as one statement, one transaction and one WAL flush. Nothing waits
   * for company, so a lone run is no slower. On by default.
   */
  groupCommit?: boolean;
}

/** The full Store, and the pool for what only PostgreSQL has (tests, the demo seed). */
export interface PostgresStore extends Store {
  readonly dialect: 'postgres';
  readonly pool: pg.Pool;
  readonly clock: Clock;
}

export async function openPostgresStore(options: PostgresStoreOptions): Promise<PostgresStore> {
  const pool = openPool(options);
  try {
    const migrations = readMigrations(findMigrationsDir('pg'));
    await withRetry('migration', async () => {
      const client = await pool.connect();
      // Checked out, the client is not covered by the pool's listener: a connection killed between two of
      // the migration's statements would otherwise be an unhandled 'error'. The next statement fails instead.
      const ignore = () => undefined;
      client.on('error', ignore);
      let failure: unknown;
      try {
        await migratePostgres(client, migrations, options.schema);
      } catch (error) {
        failure = error;
        throw error;
      } finally {
        // A connection that failed mid-migration is not handed out again.
        client.off('error', ignore);
        client.release(failure instanceof Error ? failure : undefined);
      }
    });
  } catch (error) {
    await pool.end().catch(() => undefined);
    throw error;
  }
  const c = postgresConnection(pool, options.clock ?? systemClock);
  // The connections that keep a session (liveness locks, LISTEN) go where a session survives: the main URL, or
  // WAYBILL_PG_SESSION_URL when the main one is a transaction pooler. Opened when first used.
  const sessionUrl = options.sessionUrl ?? options.url;
  const session = sessionUrl === options.url ? pool : openPool(options, sessionUrl, 4);
  const wakes = wakeListener({ url: sessionUrl, schema: options.schema });
  return {
    dialect: 'postgres',
    pool,
    clock: c.clock,
    ...postgresSteps(c, {
      groupCommit: options.groupCommit ?? true,
      // Two batches at once: what queues behind them goes as the next batch, so batches stay large. With the
      // pool's eight, a worker of 16 runs sent batches of two, and PostgreSQL's per-transaction CPU (310 µs a
      // step in its backends) halved the throughput (bench, 4 workers × 16 runs: 3,700 steps/s at 8, 5,200 at
      // 4, 6,600 at 2, 7,400 at 1). Not one: a batch waiting on a row lock would hold every run of the process.
      maxInFlight: Math.min(2, Math.max(1, (pool.options.max ?? 1) - 2)),
    }),
    ...postgresClaims(c),
    ...postgresRuns(c),
    ...postgresWorkers(c, session),
    ...postgresWorkflows(c),
    ...postgresReads(c),
    ...postgresMetrics(c),
    ...postgresAudit(c),
    ...postgresRetention(c),
    ...postgresRewind(c),
    ...postgresWaits(c),
    ...postgresLogs(c),
    ...postgresModelCalls(c),
    subscribeWakes: (onWake) => wakes.subscribe(onWake),
    async close() {
      await wakes.close();
      if (session !== pool && !session.ending) await session.end();
      if (!pool.ending) await pool.end();
    },
  };
}
