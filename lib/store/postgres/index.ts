/**
 * The PostgreSQL backend: how Waybill scales past one machine, many workers on many hosts against one
 * database. Same file names as sqlite/, same composition: one object of the operation files, each a function
 * of the connection, no chain of classes.
 */
import type pg from 'pg';
import { type Clock, systemClock } from '../../clock';
import { StoreUnavailableError } from '../../errors';
import type { Store } from '../contract';
import { type MigrationPlan, migrationsOf, notCurrent } from '../migrate/runner';
import { postgresAudit } from './audit';
import { postgresClaims } from './claims';
import { openPool, type PostgresOpenOptions, postgresConnection } from './connection';
import { postgresEvents } from './events';
import { postgresLogs } from './logs';
import { postgresMetrics } from './metrics';
import { migratePostgres } from './migrate';
import { postgresModelCalls } from './model-calls';
import { wakeListener } from './notify';
import { postgresReads } from './reads';
import { postgresRetention } from './retention';
import { withRetry } from './retry';
import { postgresRewind } from './rewind';
import { postgresRunTags } from './run-tags';
import { postgresRuns } from './runs';
import { postgresSchedules } from './schedules';
import { postgresStepStreams } from './step-streams';
import { postgresSteps } from './steps';
import { postgresWaits } from './waits';
import { postgresWebhooks } from './webhooks';
import { postgresWorkers } from './workers';
import { postgresWorkflows } from './workflows';

export interface PostgresStoreOptions extends PostgresOpenOptions {
  /**
   * Create or upgrade the schema on open (the default). False: open it only if it holds a current Waybill store,
   * and refuse (StoreRefusedError, nothing written) none or one that is behind: read-only commands,
   * WAYBILL_MIGRATE=off. A connection is tried once then, not retried.
   */
  migrate?: boolean;
  /**
   * The schema came from DATABASE_URL's `?schema=`, where an application's own URL names the application's schema
   * (Prisma's `?schema=public`): a new store is then not made beside tables of another application
   * (migrate/runner.ts, refuseSharedStore). A schema given on its own (WAYBILL_PG_SCHEMA) is taken as it is.
   */
  schemaFromUrl?: boolean;
  /** Where the one line about a store found in `public` goes (see defaultSchema); stderr unless given. */
  onNotice?: (line: string) => void;
  /**
   * Group commit (lib/store/shared/group-commit.ts): the commits, or the claims, that this process's runs have ready
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
  /** The schema its tables are in: the one asked for, else `waybill`, or `public` for an older Waybill's store. */
  readonly schema: string;
}

/** The schema Waybill uses when none is asked for (?schema=, WAYBILL_PG_SCHEMA). */
export const DEFAULT_SCHEMA = 'waybill';

export async function openPostgresStore(given: PostgresStoreOptions): Promise<PostgresStore> {
  const migrate = given.migrate ?? true;
  const database = databaseOf(given.url);
  const migrations = migrationsOf('pg');
  const { schema, startup } = await resolveSchema(given, database, migrate);
  // `schema` names the store; `startup` is what goes in the connections' search_path option (none when the
  // role's own search_path already leads there, as behind PgBouncer).
  const options = { ...given, schema: startup };
  const pool = openPool(options);
  try {
    if (migrate) {
      await withRetry('migration', () =>
        onClient(pool, database, true, (c) =>
          migratePostgres(c, migrations, schema, { database, alone: given.schemaFromUrl ?? false }),
        ),
      );
    } else {
      const plan: MigrationPlan = await onClient(pool, database, false, (c) =>
        migratePostgres(c, migrations, schema, { mode: 'inspect', database, alone: given.schemaFromUrl ?? false }),
      );
      const refusal = notCurrent(plan, migrations);
      if (refusal) throw refusal;
    }
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
    schema,
    clock: c.clock,
    ...postgresSteps(c, {
      groupCommit: options.groupCommit ?? true,
      // Two batches at once: what queues behind them goes as the next batch, so batches stay large. With the
      // pool's eight in flight, a worker of 16 runs sent batches of two, and PostgreSQL's per-transaction CPU
      // halved the throughput (bench/RESULTS.md, "Why the code is shaped so"). Not one: a batch waiting on a
      // row lock would hold every run of the process.
      maxInFlight: Math.min(2, Math.max(1, (pool.options.max ?? 1) - 2)),
    }),
    ...postgresClaims(c),
    ...postgresRuns(c),
    ...postgresRunTags(c),
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
    ...postgresStepStreams(c),
    ...postgresSchedules(c),
    ...postgresEvents(c),
    ...postgresWebhooks(c),
    subscribeWakes: (onWake) => wakes.subscribe(onWake),
    async close() {
      await wakes.close();
      if (session !== pool && !session.ending) await session.end();
      if (!pool.ending) await pool.end();
    },
  };
}

/**
 * What `waybill migrate --check` and `--print-sql` read: the schema's ledger, in a READ ONLY transaction on one
 * connection, tried once; nothing is created.
 */
export async function inspectPostgresStore(
  options: Pick<PostgresStoreOptions, 'url' | 'schema' | 'schemaFromUrl' | 'onNotice'>,
): Promise<MigrationPlan> {
  const database = databaseOf(options.url);
  const { schema, startup } = await resolveSchema(options, database, false);
  const pool = openPool({ ...options, schema: startup }, options.url, 1);
  try {
    return await onClient(pool, database, false, (c) =>
      migratePostgres(c, migrationsOf('pg'), schema, {
        mode: 'inspect',
        database,
        alone: options.schemaFromUrl ?? false,
      }),
    );
  } finally {
    await pool.end().catch(() => undefined);
  }
}

/**
 * Which schema the store is in, and whether the connections need it as their search_path option, from one
 * connection made without that option. Asked for (?schema=, WAYBILL_PG_SCHEMA): that one. Else `public` if an
 * older Waybill made its store there (its ledger is there, and `waybill` has none: it keeps working where it
 * is, named as such), else `waybill`. The option is left out when the role's own search_path leads there
 * already: a role set up for a transaction pooler, which refuses the option (docs/operations.md, "Behind PgBouncer").
 */
async function resolveSchema(
  options: Pick<PostgresStoreOptions, 'url' | 'schema' | 'onNotice'>,
  database: string,
  retry: boolean,
): Promise<{ schema: string; startup: string | undefined }> {
  const probe = openPool({ url: options.url }, options.url, 1);
  // A worker's open (`retry`) rides out a connection killed under this read as it does the migration's: a
  // failover or an operator's pg_terminate_backend at start-up must not end the process.
  const look = () =>
    onClient(probe, database, retry, async (client) => {
      const { rows } = await client.query<{ current: string | null; legacy: boolean; ours: boolean }>(
        // Read from the catalog, which needs no privilege on either schema: to_regclass() fails with
        // "permission denied" on a schema the role may not use, as another team's `waybill` may be.
        `SELECT current_schema() AS current,
                EXISTS (SELECT 1 FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
                        WHERE n.nspname = 'public' AND c.relname = 'waybill_migrations') AS legacy,
                EXISTS (SELECT 1 FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
                        WHERE n.nspname = $1 AND c.relname = 'waybill_migrations') AS ours`,
        [DEFAULT_SCHEMA],
      );
      return rows[0]!;
    });
  try {
    const seen = retry ? await withRetry('schema lookup', look) : await look();
    let schema = options.schema ?? DEFAULT_SCHEMA;
    if (options.schema === undefined && seen.current !== DEFAULT_SCHEMA && seen.legacy && !seen.ours) {
      noticeOnce(options.onNotice, database);
      schema = 'public';
    }
    return { schema, startup: seen.current === schema ? undefined : schema };
  } finally {
    await probe.end().catch(() => undefined);
  }
}

const noticed = new Set<string>();

function noticeOnce(onNotice: ((line: string) => void) | undefined, database: string): void {
  if (noticed.has(database) && !onNotice) return;
  noticed.add(database);
  const line =
    `waybill: using the store an older Waybill made in schema "public" of ${database}; new stores go in schema ` +
    `"${DEFAULT_SCHEMA}" (docs/configuration.md: "Moving a store out of public")`;
  (onNotice ?? ((l: string) => process.stderr.write(`${l}\n`)))(line);
}

/**
 * Runs fn on one pooled connection. A connection that cannot be made is one StoreUnavailableError naming the
 * server and the driver's reason: tried once for a read, and for a migrating open as often as the usual
 * retry policy allows (a server restarting).
 */
async function onClient<T>(
  pool: pg.Pool,
  database: string,
  retry: boolean,
  fn: (client: pg.PoolClient) => Promise<T>,
): Promise<T> {
  let client: pg.PoolClient;
  try {
    client = retry ? await withRetry('connection', () => pool.connect()) : await pool.connect();
  } catch (thrown) {
    const error = thrown instanceof StoreUnavailableError ? thrown.cause : thrown;
    throw new StoreUnavailableError(`cannot connect to PostgreSQL at ${database}: ${reason(error)}`, error);
  }
  // A connection killed between two of the migration's statements is heard by the client's own listener
  // (openPool): the next statement fails instead, and the attempt is retried on another connection.
  let failure: unknown;
  try {
    return await fn(client);
  } catch (error) {
    failure = error;
    throw error;
  } finally {
    // A connection that failed mid-migration is not handed out again.
    client.release(failure instanceof Error ? failure : undefined);
  }
}

/** host:port/database, without the user or password: how messages name the server. */
function databaseOf(url: string): string {
  try {
    const parsed = new URL(url);
    return `${parsed.hostname}:${parsed.port || '5432'}${parsed.pathname}`;
  } catch {
    return 'the PostgreSQL server of DATABASE_URL';
  }
}

function reason(error: unknown): string {
  const e = error as { message?: string; code?: string; errors?: { message?: string }[] } | null;
  return e?.message || e?.errors?.[0]?.message || e?.code || String(error);
}
