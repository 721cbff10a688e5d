/**
 * The one PostgreSQL test harness, for vitest and Playwright alike (nothing here imports a test runner at
 * load time): the server to use, whether it answers (under CI=true it must: a failure, never a skip), a
 * schema of one's own per test, and a TCP proxy in front of the server that can lose an answer or cut every
 * connection.
 *
 *   if (!(await postgresAvailable('PostgreSQL store tests'))) …skip…
 *   const schema = await testSchema();       // vitest: dropped when the current test finishes
 *   const schema = await createSchema();     // anywhere: drop it yourself with schema.drop()
 */
import { randomBytes } from 'node:crypto';
import net from 'node:net';
import pg from 'pg';

export const TEST_DATABASE_URL = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

/** Why PostgreSQL cannot be tested here, or null when it answers. */
export async function postgresUnreachable(): Promise<string | null> {
  const client = new pg.Client({ connectionString: TEST_DATABASE_URL, connectionTimeoutMillis: 5000 });
  try {
    await client.connect();
    await client.query('SELECT 1');
    return null;
  } catch (error) {
    return `PostgreSQL at ${TEST_DATABASE_URL} is unreachable (${(error as Error).message})`;
  } finally {
    await client.end().catch(() => undefined);
  }
}

const probed = new Map<string, Promise<boolean>>();

/**
 * True when PostgreSQL answers. Under CI=true an unreachable server throws (the suite fails, it is not
 * skipped); elsewhere it warns loudly, once per suite name, and answers false.
 */
export function postgresAvailable(suite: string): Promise<boolean> {
  let answer = probed.get(suite);
  if (!answer) {
    answer = postgresUnreachable().then((why) => {
      if (why === null) return true;
      if (process.env.CI === 'true')
        throw new Error(
          `CI=true requires PostgreSQL for ${suite}, but ${why}. Start PostgreSQL or set TEST_DATABASE_URL.`,
        );
      console.warn(
        `\n!!! ${suite} SKIPPED on PostgreSQL: ${why}.\n!!! Start PostgreSQL or set TEST_DATABASE_URL (CI=true makes this an error).\n`,
      );
      return false;
    });
    probed.set(suite, answer);
  }
  return answer;
}

/** One connection outside any store, for setting up and inspecting a test's schema. */
export class Admin {
  private constructor(private readonly client: pg.Client) {}

  static async connect(): Promise<Admin> {
    const client = new pg.Client({ connectionString: TEST_DATABASE_URL, application_name: 'waybill-test-admin' });
    await client.connect();
    return new Admin(client);
  }

  async query<R extends pg.QueryResultRow = Record<string, unknown>>(
    text: string,
    values: unknown[] = [],
  ): Promise<R[]> {
    return (await this.client.query<R>(text, values)).rows;
  }

  /** A single number from a single-column query (count(*) comes back as a string otherwise). */
  async count(text: string, values: unknown[] = []): Promise<number> {
    const rows = await this.query(text, values);
    return Number(Object.values(rows[0] ?? {})[0] ?? 0);
  }

  async end(): Promise<void> {
    await this.client.end();
  }
}

export interface TestSchema {
  name: string;
  admin: Admin;
  /** `name.table`, quoted, for the admin connection (whose search_path is not the schema). */
  t(table: string): string;
  /** The test URL with `?schema=` this schema: what a process under test is given as its DATABASE_URL. */
  url: string;
  /** Drops the schema (with everything in it) and closes the admin connection. */
  drop(): Promise<void>;
}

/** A fresh random schema name (created by the store that first opens it) and an admin connection. */
export async function createSchema(prefix = 'wb_pg'): Promise<TestSchema> {
  const name = `${prefix}_${randomBytes(6).toString('hex')}`;
  const admin = await Admin.connect();
  const url = new URL(TEST_DATABASE_URL);
  url.searchParams.set('schema', name);
  return {
    name,
    admin,
    url: url.toString(),
    t: (table) => `"${name}"."${table}"`,
    async drop() {
      try {
        await admin.query(`DROP SCHEMA IF EXISTS "${name}" CASCADE`);
      } finally {
        await admin.end();
      }
    },
  };
}

/** createSchema, dropped when the current vitest test finishes. Only from inside a vitest test. */
export async function testSchema(prefix = 'wb_pg'): Promise<TestSchema> {
  // Loaded here, not at the top: Playwright imports this module too, and must not load vitest.
  const { onTestFinished } = await import('vitest');
  const schema = await createSchema(prefix);
  onTestFinished(() => schema.drop());
  return schema;
}

/**
 * The test URL, optionally with an application_name of its own (so a test can find, and kill, exactly its
 * connections) and with synchronous_commit off. The latter is for tests about concurrency, not durability:
 * a commit is still atomic and visible at once, only a crash of the server itself could lose the last
 * few; this machine's fsync costs 3 ms a commit, which would dominate every multi-process test.
 */
export function testUrl(options: { applicationName?: string; asyncCommit?: boolean } = {}): string {
  const url = new URL(TEST_DATABASE_URL);
  if (options.applicationName) url.searchParams.set('application_name', options.applicationName);
  if (options.asyncCommit) url.searchParams.set('options', '-c synchronous_commit=off');
  return url.toString();
}

export interface PgProxy {
  /** The target URL with the proxy's host and port. */
  url: string;
  /**
   * Loses the answer to the next request that contains `marker` (a prepared statement's name travels in
   * every Parse and Bind): the request reaches the server and runs, and the connection is cut as its answer
   * comes back. The client sees only a dead connection — the outcome-unknown case a retry must get right.
   */
  loseAnswerTo(marker: string): void;
  /** How many answers were lost so far. */
  readonly lost: number;
  /** Drops every open connection and refuses new ones, as when the database host goes away. */
  cut(): void;
  /** Lets connections through again after cut(). */
  open(): void;
  close(): Promise<void>;
}

/** A TCP proxy in front of the PostgreSQL of targetUrl, on a free loopback port. */
export async function startPgProxy(targetUrl = TEST_DATABASE_URL): Promise<PgProxy> {
  const target = new URL(targetUrl);
  let marker: string | null = null;
  let lost = 0;
  let shut = false;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    // Refused: the port stays bound with nothing behind it.
    if (shut) return void client.destroy();
    const upstream = net.connect(Number(target.port || 5432), target.hostname);
    sockets.add(client).add(upstream);
    let doomed = false;
    client.on('data', (chunk) => {
      if (marker !== null && chunk.includes(marker)) {
        marker = null;
        doomed = true;
      }
      upstream.write(chunk);
    });
    upstream.on('data', (chunk) => {
      if (!doomed) return void client.write(chunk);
      lost++;
      client.destroy();
      upstream.destroy();
    });
    const drop = () => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    client.on('close', drop).on('error', drop);
    upstream.on('close', drop).on('error', drop);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = new URL(targetUrl);
  url.hostname = '127.0.0.1';
  url.port = String((server.address() as net.AddressInfo).port);
  return {
    url: url.toString(),
    loseAnswerTo(m) {
      marker = m;
    },
    get lost() {
      return lost;
    },
    cut() {
      shut = true;
      for (const socket of sockets) socket.destroy();
      sockets.clear();
    },
    open() {
      shut = false;
    },
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

export interface TestDatabase {
  name: string;
  /** The database's URL, without ?schema=: what a user's DATABASE_URL would be. */
  url: string;
  /** Runs SQL in the database (not in the test server's default one). */
  query<R extends pg.QueryResultRow = Record<string, unknown>>(text: string, values?: unknown[]): Promise<R[]>;
}

/**
 * A database of its own for the current vitest test, holding what CREATE DATABASE gives (an empty `public`), under
 * a name no test had before: for tests about what Waybill does with a whole database (its default schema,
 * `public`), which a schema per test cannot show. Its connections are ended when the test finishes.
 *
 * The databases are kept and emptied for the next test, never dropped. DROP DATABASE waits for an immediate
 * checkpoint, which writes and fsyncs everything the whole server wrote since the last one: on a loaded machine,
 * after the schemas the other files made, that took longer than the 60 s a hook gets, however little the test
 * itself wrote (test/postgres/schema.test.ts failed so). Emptying a database drops its schemas, which needs no
 * checkpoint. A test holds its database's slot with a session advisory lock (let go when the test ends, or by the
 * server when the process dies), so parallel files and parallel runs never share one; the slot's database is
 * renamed when taken, so nothing a process keeps by database name (a notice said once) passes to the next test.
 */
export async function testDatabase(prefix = 'wb_db'): Promise<TestDatabase> {
  const { onTestFinished } = await import('vitest');
  const admin = await Admin.connect();
  const url = new URL(TEST_DATABASE_URL);
  let client: pg.Client | undefined;
  try {
    url.pathname = `/${await takeDatabase(admin, prefix)}`;
    client = new pg.Client({ connectionString: url.toString(), application_name: 'waybill-test-admin' });
    await client.connect();
    await emptyDatabase(client);
  } catch (error) {
    await client?.end().catch(() => undefined);
    await admin.end().catch(() => undefined);
    throw error;
  }
  const name = url.pathname.slice(1);
  const session = client;
  onTestFinished(async () => {
    await session.end().catch(() => undefined);
    try {
      // What the test left connected is cut here, as DROP DATABASE … WITH (FORCE) did.
      await admin.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1', [name]);
    } finally {
      await admin.end(); // and with it the slot's lock
    }
  });
  return { name, url: url.toString(), query: async (text, values = []) => (await session.query(text, values)).rows };
}

/**
 * Takes the first free slot (a session advisory lock of `admin`) and gives its database, `<prefix>_<slot>_<hex>`, a
 * fresh name, or makes it when the slot has none yet. Answers the name.
 */
async function takeDatabase(admin: Admin, prefix: string): Promise<string> {
  const take = async (slot: number) =>
    (
      await admin.query<{ ok: boolean }>('SELECT pg_try_advisory_lock(hashtext($1), $2) AS ok', [
        `waybill-test.database.${prefix}`,
        slot,
      ])
    )[0]!.ok;
  let slot = 0;
  while (!(await take(slot))) slot++;
  const name = `${prefix}_${slot}_${randomBytes(6).toString('hex')}`;
  const [held] = await admin.query<{ name: string }>('SELECT datname AS name FROM pg_database WHERE datname LIKE $1', [
    `${`${prefix}_${slot}_`.replace(/[\\_%]/g, '\\$&')}%`,
  ]);
  if (!held) {
    await admin.query(`CREATE DATABASE "${name}"`);
    return name;
  }
  // Sessions the slot's last test left are ended; RENAME waits a few seconds for them to go.
  await admin.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1', [held.name]);
  await admin.query(`ALTER DATABASE "${held.name}" RENAME TO "${name}"`);
  return name;
}

/**
 * Drops every schema but the system's, `public` only when something is in it, and makes `public` again as
 * CREATE DATABASE does (PostgreSQL 15: owned by pg_database_owner, USAGE for everyone).
 */
async function emptyDatabase(client: pg.Client): Promise<void> {
  const { rows } = await client.query<{ name: string }>(
    `SELECT n.nspname AS name FROM pg_namespace n
     WHERE n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname !~ '^pg_(toast|temp_)'
       AND (n.nspname <> 'public' OR EXISTS (SELECT 1 FROM pg_depend d
         WHERE d.refclassid = 'pg_namespace'::regclass AND d.refobjid = n.oid))`,
  );
  for (const { name: schema } of rows) await client.query(`DROP SCHEMA "${schema}" CASCADE`);
  const { rows: kept } = await client.query("SELECT 1 FROM pg_namespace WHERE nspname = 'public'");
  if (kept.length > 0) return;
  await client.query('CREATE SCHEMA public AUTHORIZATION pg_database_owner');
  await client.query('GRANT USAGE ON SCHEMA public TO PUBLIC');
  await client.query(`COMMENT ON SCHEMA public IS 'standard public schema'`);
}
