/**
 * Opens the backend a URL names: `file:<path>` for SQLite, `postgres://…` for PostgreSQL. Each backend is
 * loaded when its URL is opened, not before: a project on PostgreSQL never loads better-sqlite3 (a native
 * module it may not even have installed; sqlite/driver.ts loads it as a file opens), one on SQLite never loads
 * pg, and a missing driver is an error naming the package to install.
 */
import type { Clock } from '../clock';
import { pgSchemaFromEnv } from '../config';
import { DriverMissingError, InvalidInputError } from '../errors';
import type { Store } from './contract';
import type { MigrationPlan } from './migrate/runner';
import type { PostgresStore } from './postgres/index';
import { isDriverMissing } from './shared/driver-missing';
import type { SqliteStore } from './sqlite/index';

export type { PostgresStore } from './postgres/index';
export type { SqliteStore } from './sqlite/index';
/** An opened store with its backend's own handle: what the demo seed (lib/store/seed) takes. */
export type Backend = SqliteStore | PostgresStore;

export interface OpenStoreOptions {
  /**
   * Create or upgrade the store on open (the default, WAYBILL_MIGRATE=on). False: open only a current Waybill
   * store, and refuse (StoreRefusedError, nothing written) none, or one that is behind: `waybill migrate` creates
   * or upgrades it. Read-only commands and the dashboard's pages open this way.
   */
  migrate?: boolean;
  /**
   * PostgreSQL: the schema of Waybill's tables (WAYBILL_PG_SCHEMA; `?schema=` in the URL says the same). Unset:
   * `waybill`, or `public` where an older Waybill made its store there.
   */
  schema?: string;
  synchronous?: 'full' | 'normal';
  /**
   * The shortest step lease this store will grant (the worker's WAYBILL_LEASE_MS). SQLite keeps its wait for the
   * write lock within two thirds of it, so a commit that only waited for the lock never loses its claim.
   */
  leaseMs?: number;
  /**
   * Claims and commits ready at the same moment share one transaction (WAYBILL_GROUP_COMMIT; on unless false):
   * on SQLite one BEGIN IMMEDIATE, on PostgreSQL one statement of a batch function.
   */
  groupCommit?: boolean;
  clock?: Clock;
  /** PostgreSQL: connections in the pool (WAYBILL_PG_POOL_SIZE). */
  poolSize?: number;
  /** PostgreSQL: where LISTEN and the liveness locks connect (WAYBILL_PG_SESSION_URL); its ?schema= is ignored. */
  sessionUrl?: string;
  /** PostgreSQL: whether statements are prepared by name (WAYBILL_PG_NAMED_STATEMENTS). */
  namedStatements?: boolean;
}

/** The full Store: every interface both backends implement. */
export async function openStore(url: string, options: OpenStoreOptions = {}): Promise<Store> {
  return openBackend(url, options);
}

/** openStore, with the backend's own handle (the SQLite file, the PostgreSQL pool) told apart by `dialect`. */
export async function openBackend(url: string, options: OpenStoreOptions = {}): Promise<Backend> {
  const target = parseStoreUrl(url, options.schema);
  if (target.dialect === 'sqlite') {
    const { openSqliteStore } = await import('./sqlite/index');
    return openSqliteStore({
      path: target.path,
      migrate: options.migrate,
      synchronous: options.synchronous,
      leaseMs: options.leaseMs,
      groupCommit: options.groupCommit,
      clock: options.clock,
    });
  }
  const { openPostgresStore } = await loadBackend('pg', target.shown, () => import('./postgres/index'));
  return openPostgresStore({
    url: target.url,
    schema: target.schema,
    schemaFromUrl: target.schemaFromUrl,
    migrate: options.migrate,
    clock: options.clock,
    poolSize: options.poolSize,
    sessionUrl: options.sessionUrl === undefined ? undefined : withoutSchema(options.sessionUrl),
    namedStatements: options.namedStatements,
    groupCommit: options.groupCommit,
  });
}

/**
 * What migrating the store would do, read without writing anything (`waybill migrate --check`, `--print-sql`):
 * a store not there yet is `exists: false` with every migration pending, and nothing is created.
 */
export async function inspectStore(
  url: string,
  options: Pick<OpenStoreOptions, 'schema'> = {},
): Promise<MigrationPlan> {
  const target = parseStoreUrl(url, options.schema);
  if (target.dialect === 'sqlite') {
    const { inspectSqliteStore } = await import('./sqlite/index');
    return inspectSqliteStore(target.path);
  }
  const { inspectPostgresStore } = await loadBackend('pg', target.shown, () => import('./postgres/index'));
  return inspectPostgresStore({ url: target.url, schema: target.schema, schemaFromUrl: target.schemaFromUrl });
}

/**
 * Moves a PostgreSQL store from its schema (the URL's or `schema`, else `public`: where an older Waybill made it)
 * into `to`, in one transaction. Stop its workers and dashboards first: their connections name the old schema.
 */
export async function moveStoreToSchema(
  url: string,
  to: string,
  options: Pick<OpenStoreOptions, 'schema'> = {},
): Promise<{ from: string; tables: string[]; functions: string[] }> {
  const target = parseStoreUrl(url, options.schema);
  if (target.dialect !== 'postgres') throw new InvalidInputError('--move-to-schema is for a PostgreSQL store');
  const { moveStoreSchema } = await loadBackend('pg', target.shown, () => import('./postgres/move'));
  const from = target.schema ?? 'public';
  return { from, ...(await moveStoreSchema(target.url, from, to)) };
}

type StoreTarget =
  | { dialect: 'sqlite'; path: string }
  | { dialect: 'postgres'; url: string; schema: string | undefined; schemaFromUrl: boolean; shown: string };

/**
 * The backend and place a URL names. The schema, when neither the URL nor the caller names one, is
 * WAYBILL_PG_SCHEMA's, as the CLI's and the workers' is: read only for a postgres:// URL.
 */
function parseStoreUrl(url: string, schemaOption: string | undefined): StoreTarget {
  if (typeof url !== 'string' || url === '') {
    throw new InvalidInputError(
      'openStore needs a store URL (file:<path> or postgres://…), got none: is DATABASE_URL set?',
    );
  }
  if (url.startsWith('file:')) {
    const path = url.slice('file:'.length).replace(/^\/\/(?=\/)/, '');
    if (!path) throw new InvalidInputError(`DATABASE_URL ${url} names no file`);
    return { dialect: 'sqlite', path };
  }
  if (/^postgres(ql)?:\/\//.test(url)) {
    // `?schema=name` keeps Waybill's tables in that schema (created if missing), as Prisma's URLs do.
    const parsed = new URL(url);
    const inUrl = parsed.searchParams.get('schema') || undefined;
    schemaOption ??= pgSchemaFromEnv();
    if (inUrl !== undefined && schemaOption !== undefined && inUrl !== schemaOption) {
      throw new InvalidInputError(
        `DATABASE_URL asks for schema ${JSON.stringify(inUrl)} and WAYBILL_PG_SCHEMA for ${JSON.stringify(schemaOption)}: give one`,
      );
    }
    parsed.searchParams.delete('schema');
    return {
      dialect: 'postgres',
      url: inUrl ? parsed.toString() : url,
      schema: inUrl ?? schemaOption,
      schemaFromUrl: inUrl !== undefined,
      shown: `postgres://${parsed.host}${parsed.pathname}`,
    };
  }
  throw new InvalidInputError(
    `DATABASE_URL must start with file: or postgres://, got ${JSON.stringify(url.slice(0, 40))}`,
  );
}

/** The session URL speaks for the same store as DATABASE_URL, whose ?schema= is the one. */
function withoutSchema(url: string): string {
  const parsed = new URL(url);
  if (!parsed.searchParams.has('schema')) return url;
  parsed.searchParams.delete('schema');
  return parsed.toString();
}

async function loadBackend<M>(driver: string, url: string, load: () => Promise<M>): Promise<M> {
  try {
    return await load();
  } catch (error) {
    if (isDriverMissing(error, driver)) throw new DriverMissingError(driver, url, error);
    throw error;
  }
}

export type * from './contract';

/**
 * Whether an error is a lost or refused connection, whichever backend raised it: the control plane's store
 * guard asks, to answer 503 rather than 500. The PostgreSQL codes live with that backend; the module loads no driver.
 */
export { isConnectionLoss } from './postgres/retry';
