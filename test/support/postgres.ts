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
 * A fresh database of its own, dropped when the current vitest test finishes: for tests about what Waybill
 * does with a whole database (its default schema, `public`), which a schema per test cannot show.
 */
export async function testDatabase(prefix = 'wb_db'): Promise<TestDatabase> {
  const { onTestFinished } = await import('vitest');
  const name = `${prefix}_${randomBytes(6).toString('hex')}`;
  const admin = await Admin.connect();
  await admin.query(`CREATE DATABASE "${name}"`);
  const url = new URL(TEST_DATABASE_URL);
  url.pathname = `/${name}`;
  const client = new pg.Client({ connectionString: url.toString(), application_name: 'waybill-test-admin' });
  await client.connect();
  onTestFinished(async () => {
    await client.end().catch(() => undefined);
    try {
      await admin.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
    } finally {
      await admin.end();
    }
  });
  return { name, url: url.toString(), query: async (text, values = []) => (await client.query(text, values)).rows };
}
