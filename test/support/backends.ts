/**
 * The backends the store contract suite runs against: SQLite always, PostgreSQL when it can be reached.
 *
 *   const list = await backends();
 *   describe.each(list)('store contract on $name', (backend) => { … backend.open() … });
 *
 * SQLite runs on a fresh temp file per test with a ManualClock, so lease expiry costs no sleep. PostgreSQL
 * takes time from the database's clock, so `elapse(ms)` is a real wait there: tests that need a lease to pass
 * use short leases (≈200 ms) and elapse a generous multiple of them, and the same test runs on both.
 *
 * PostgreSQL is imported lazily: when lib/store/postgres/index.ts does not exist or the server does not answer,
 * the suite fails under CI=true and otherwise warns loudly and runs SQLite alone.
 */
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { ManualClock, type Clock } from '../../lib/clock';
import { openSqliteStore, type SqliteStore } from '../../lib/store/sqlite';
import type { Store } from '../../lib/store/types';
import { makeTempDir } from './tmp';

export const TEST_DATABASE_URL = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

export interface StoreHandle {
  store: Store;
  /**
   * Lets `ms` pass on the store's clock. SQLite: the ManualClock moves and nothing sleeps. PostgreSQL: a real
   * wait, because the database's clock is the one that counts.
   */
  elapse(ms: number): Promise<void>;
  /**
   * Writes a claim the way the article's client does — idem_key, run_id, claimed_at only (no token, no
   * lease) — with claimed_at taken from the store's own clock.
   */
  insertOutsideClaim(idemKey: string, runId: string): Promise<void>;
  /** Runs SQL against the store's tables directly, as another client (or an operator's psql) would. */
  exec(sql: string): Promise<void>;
  /**
   * Another store on the same file or schema, as a second dashboard process (or the same one restarted)
   * would open it. Closed by close().
   */
  reopen(): Promise<Store>;
  /** Closes the store, and every reopened one, and removes its file or schema. */
  close(): Promise<void>;
}

export interface Backend {
  name: 'sqlite' | 'postgres';
  open(): Promise<StoreHandle>;
}

type OpenPostgres = (options: {
  url: string;
  schema?: string;
  clock?: Clock;
  poolSize?: number;
}) => Promise<Store & { dialect: 'postgres' }>;

export const sqliteBackend: Backend = {
  name: 'sqlite',
  async open() {
    const dir = makeTempDir('waybill-contract-');
    const clock = new ManualClock();
    // NORMAL: these tests are about the protocol, not about surviving power loss; FULL only costs fsyncs.
    const store: SqliteStore = openSqliteStore({ path: dir.file('store.db'), clock, synchronous: 'normal' });
    const others: Store[] = [];
    return {
      store,
      async reopen() {
        const other = openSqliteStore({ path: dir.file('store.db'), clock, synchronous: 'normal' });
        others.push(other);
        return other;
      },
      async elapse(ms) {
        clock.advance(ms);
      },
      async insertOutsideClaim(idemKey, runId) {
        store.db
          .prepare('INSERT INTO claims(idem_key, run_id, claimed_at) VALUES(?,?,?)')
          .run(idemKey, runId, clock.now() / 1000);
      },
      async exec(sql) {
        store.db.exec(sql);
      },
      async close() {
        for (const other of others) await other.close();
        await store.close();
        dir.remove();
      },
    };
  },
};

function postgresBackend(openPostgresStore: OpenPostgres): Backend {
  return {
    name: 'postgres',
    async open() {
      const schema = `wb_test_${randomBytes(6).toString('hex')}`;
      const admin = new pg.Client({ connectionString: TEST_DATABASE_URL });
      await admin.connect();
      let store: Store;
      try {
        store = await openPostgresStore({ url: TEST_DATABASE_URL, schema, poolSize: 4 });
      } catch (error) {
        await dropSchema(admin, schema);
        throw error;
      }
      const others: Store[] = [];
      return {
        store,
        async reopen() {
          const other = await openPostgresStore({ url: TEST_DATABASE_URL, schema, poolSize: 4 });
          others.push(other);
          return other;
        },
        async elapse(ms) {
          await sleep(ms);
        },
        async insertOutsideClaim(idemKey, runId) {
          await admin.query(
            `INSERT INTO "${schema}".claims (idem_key, run_id, claimed_at)
             VALUES ($1, $2, extract(epoch from clock_timestamp()))`,
            [idemKey, runId],
          );
        },
        async exec(sql) {
          await admin.query(`SET search_path TO "${schema}"; ${sql}; RESET search_path`);
        },
        async close() {
          try {
            for (const other of others) await other.close();
            await store.close();
          } finally {
            await dropSchema(admin, schema);
          }
        },
      };
    },
  };
}

async function dropSchema(admin: pg.Client, schema: string): Promise<void> {
  try {
    await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  } finally {
    await admin.end();
  }
}

/** Why PostgreSQL cannot be tested here, or null when it can. */
async function probePostgres(): Promise<{ open: OpenPostgres } | { skip: string }> {
  const file = fileURLToPath(new URL('../../lib/store/postgres/index.ts', import.meta.url));
  if (!existsSync(file)) return { skip: `${file} does not exist yet` };
  const client = new pg.Client({ connectionString: TEST_DATABASE_URL, connectionTimeoutMillis: 5000 });
  try {
    await client.connect();
    await client.query('SELECT 1');
  } catch (error) {
    return { skip: `PostgreSQL at ${TEST_DATABASE_URL} is unreachable (${(error as Error).message})` };
  } finally {
    await client.end().catch(() => {});
  }
  // The file exists and the server answers: from here on, an error in the backend is a test failure.
  // The specifier is a variable so that type-checking does not require the file to exist yet.
  const specifier = '../../lib/store/postgres';
  const mod = (await import(/* @vite-ignore */ specifier)) as { openPostgresStore?: OpenPostgres };
  if (typeof mod.openPostgresStore !== 'function') {
    throw new Error('lib/store/postgres/index.ts does not export openPostgresStore(options)');
  }
  return { open: mod.openPostgresStore };
}

let cached: Promise<Backend[]> | undefined;

/** SQLite, plus PostgreSQL when it is available (required under CI=true). */
export function backends(): Promise<Backend[]> {
  cached ??= (async () => {
    const probe = await probePostgres();
    if ('open' in probe) return [sqliteBackend, postgresBackend(probe.open)];
    if (process.env.CI === 'true') {
      throw new Error(`CI=true requires the PostgreSQL backend, but ${probe.skip}. Start PostgreSQL or set TEST_DATABASE_URL.`);
    }
    console.warn(
      `\n!!! PostgreSQL contract tests SKIPPED: ${probe.skip}.\n` +
        '!!! Only the SQLite backend was tested. Set TEST_DATABASE_URL (or CI=true to make this an error).\n',
    );
    return [sqliteBackend];
  })();
  return cached;
}
