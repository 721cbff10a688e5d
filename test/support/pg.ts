/**
 * PostgreSQL for the tests under test/postgres: the server to use, whether it answers, and a schema of
 * one's own per test that is dropped when the test finishes.
 *
 *   const pgUp = await postgresAvailable('PostgreSQL store tests');
 *   describe.skipIf(!pgUp)('…', () => { it('…', async () => { const s = await testSchema(); … }) });
 *
 * Unreachable PostgreSQL fails the suite under CI=true; elsewhere it skips with a loud warning.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { onTestFinished } from 'vitest';

export const TEST_DATABASE_URL = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

/** True when PostgreSQL answers. Throws under CI=true when it does not; warns loudly otherwise. */
export async function postgresAvailable(suite: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: TEST_DATABASE_URL, connectionTimeoutMillis: 5000 });
  try {
    await client.connect();
    await client.query('SELECT 1');
    return true;
  } catch (error) {
    const why = `PostgreSQL at ${TEST_DATABASE_URL} is unreachable (${(error as Error).message})`;
    if (process.env.CI === 'true') throw new Error(`CI=true requires PostgreSQL for ${suite}, but ${why}`);
    console.warn(`\n!!! ${suite} SKIPPED: ${why}.\n!!! Start PostgreSQL or set TEST_DATABASE_URL (CI=true makes this an error).\n`);
    return false;
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** One connection outside any store, for setting up and inspecting a test's schema. */
export class Admin {
  private constructor(private readonly client: pg.Client) {}

  static async connect(): Promise<Admin> {
    const client = new pg.Client({ connectionString: TEST_DATABASE_URL, application_name: 'waybill-test-admin' });
    await client.connect();
    return new Admin(client);
  }

  async query<R extends pg.QueryResultRow = Record<string, unknown>>(text: string, values: unknown[] = []): Promise<R[]> {
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
}

/** A fresh random schema name and an admin connection; both dropped when the current test finishes. */
export async function testSchema(prefix = 'wb_pg'): Promise<TestSchema> {
  const name = `${prefix}_${randomBytes(6).toString('hex')}`;
  const admin = await Admin.connect();
  onTestFinished(async () => {
    try {
      await admin.query(`DROP SCHEMA IF EXISTS "${name}" CASCADE`);
    } finally {
      await admin.end();
    }
  });
  return { name, admin, t: (table) => `"${name}"."${table}"` };
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
