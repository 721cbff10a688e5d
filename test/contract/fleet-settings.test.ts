/**
 * The fleet's settings (#17), at the boundary: each bad value is refused naming its variable, each good one
 * reaches the store. On PostgreSQL: the pool has the size asked for; named statements off leaves nothing
 * prepared on the server (what a transaction pooler older than PgBouncer 1.21 needs); and a schema the
 * connection cannot see — what a pooler dropping the search_path startup option leaves — is refused at open,
 * nothing created in the schema the connection does see.
 */
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { parseConfig, storeOptions } from '../../lib/config';
import { ConfigError, StoreRefusedError } from '../../lib/errors';
import { openBackend } from '../../lib/store/index';
import { Admin, postgresAvailable, TEST_DATABASE_URL, testSchema } from '../support/postgres';

const PG = 'postgres://db.example/app';
const refusal = (env: Record<string, string>) => {
  try {
    parseConfig(env);
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as Error).message;
  }
  throw new Error(`accepted ${JSON.stringify(env)}`);
};

describe('fleet settings', () => {
  it('defaults: a day of worker history, a 2 s idle poll, ten connections, statements named, sessions on the main URL', () => {
    const cfg = parseConfig({ DATABASE_URL: PG });
    expect(cfg.WAYBILL_WORKER_RETENTION).toBe(24 * 3_600_000);
    expect(cfg.WAYBILL_IDLE_POLL_MS).toBe(2000);
    expect(storeOptions(cfg)).toMatchObject({ poolSize: 10, namedStatements: true, sessionUrl: undefined });
  });

  it('takes good values', () => {
    const cfg = parseConfig({
      DATABASE_URL: PG,
      WAYBILL_WORKER_RETENTION: '3d',
      WAYBILL_IDLE_POLL_MS: '30000',
      WAYBILL_PG_POOL_SIZE: '40',
      WAYBILL_PG_SESSION_URL: 'postgres://db-direct.example/app',
      WAYBILL_PG_NAMED_STATEMENTS: 'off',
    });
    expect(cfg.WAYBILL_WORKER_RETENTION).toBe(3 * 86_400_000);
    expect(cfg.WAYBILL_IDLE_POLL_MS).toBe(30_000);
    expect(storeOptions(cfg)).toMatchObject({
      poolSize: 40,
      sessionUrl: 'postgres://db-direct.example/app',
      namedStatements: false,
    });
  });

  it('refuses bad values, naming the variable', () => {
    expect(refusal({ WAYBILL_WORKER_RETENTION: '24' })).toMatch(
      /WAYBILL_WORKER_RETENTION: must be a whole number and a unit/,
    );
    expect(refusal({ WAYBILL_WORKER_RETENTION: '30m' })).toMatch(/WAYBILL_WORKER_RETENTION: must be at least 1h/);
    expect(refusal({ WAYBILL_IDLE_POLL_MS: '50' })).toMatch(
      /WAYBILL_IDLE_POLL_MS: must be a whole number of milliseconds/,
    );
    expect(refusal({ WAYBILL_IDLE_POLL_MS: 'soon' })).toMatch(/WAYBILL_IDLE_POLL_MS/);
    // Every variable of milliseconds says so in the same words, whatever is wrong with it.
    for (const bad of ['abc', '2.5', '99', '']) {
      expect(refusal({ WAYBILL_RUN_LEASE_MS: bad })).toMatch(
        /WAYBILL_RUN_LEASE_MS: must be a whole number of milliseconds, at least 100$/m,
      );
    }
    expect(refusal({ WAYBILL_HEARTBEAT_MS: 'often' })).toMatch(
      /WAYBILL_HEARTBEAT_MS: must be a whole number of milliseconds, 20-60000$/m,
    );
    for (const bad of ['0', '1001', '2.5', 'ten', '']) {
      expect(refusal({ DATABASE_URL: PG, WAYBILL_PG_POOL_SIZE: bad })).toMatch(
        /WAYBILL_PG_POOL_SIZE: must be a whole number of connections, 1-1000/,
      );
    }
    expect(refusal({ DATABASE_URL: PG, WAYBILL_PG_SESSION_URL: 'mysql://x' })).toMatch(
      /WAYBILL_PG_SESSION_URL: must be a postgres:\/\/ URL/,
    );
    expect(refusal({ WAYBILL_PG_SESSION_URL: 'postgres://x/y' })).toMatch(
      /WAYBILL_PG_SESSION_URL: is for PostgreSQL, but DATABASE_URL is a SQLite file/,
    );
    expect(refusal({ DATABASE_URL: PG, WAYBILL_PG_NAMED_STATEMENTS: 'false' })).toMatch(
      /WAYBILL_PG_NAMED_STATEMENTS: must be on or off/,
    );
  });
});

const onPostgres = await postgresAvailable('the fleet settings');

describe.skipIf(!onPostgres)('fleet settings on PostgreSQL', () => {
  it('a pool of the size asked for; with named statements off, nothing is prepared on the server', async () => {
    const schema = await testSchema('wb_settings');
    const run = { id: 'r1', workflow: 'wf', inputJson: '{}', totalSteps: null };
    for (const namedStatements of [true, false]) {
      // One connection, so the session asked about is the one every statement ran on.
      const store = await openBackend(schema.url, { poolSize: 1, namedStatements });
      if (store.dialect !== 'postgres') throw new Error('expected PostgreSQL');
      try {
        expect(store.pool.options.max).toBe(1);
        await store.createRun({ ...run, id: `r-${namedStatements}` });
        expect(await store.claimRun({ workerId: 'w', leaseMs: 30_000, workflows: ['wf'] })).toMatchObject({
          id: `r-${namedStatements}`,
        });
        const prepared = (
          await store.pool.query<{ name: string }>('SELECT name FROM pg_prepared_statements ORDER BY name')
        ).rows.map((r) => r.name);
        expect(prepared).toEqual(namedStatements ? ['waybill_run_claim', 'waybill_run_create'] : []);
      } finally {
        await store.close();
      }
    }
    const sized = await openBackend(schema.url, { poolSize: 37 });
    try {
      expect(sized.dialect === 'postgres' && sized.pool.options.max).toBe(37);
    } finally {
      await sized.close();
    }
  });

  it('refuses a schema its connections cannot see, and creates nothing where they can', async () => {
    const suffix = randomBytes(4).toString('hex');
    const role = `wb_nouse_${suffix}`;
    const theirs = `wb_theirs_${suffix}`;
    const admin = await Admin.connect();
    try {
      await admin.query(`CREATE ROLE ${role} LOGIN`);
      await admin.query(`CREATE SCHEMA ${theirs}`);
      // The role may create in a schema of its own making, but not use `theirs`: its search_path skips it.
      await admin.query(`GRANT CREATE ON DATABASE ${new URL(TEST_DATABASE_URL).pathname.slice(1)} TO ${role}`);
      const url = new URL(TEST_DATABASE_URL);
      url.username = role;
      url.searchParams.set('schema', theirs);
      const error = await openBackend(url.toString()).then(
        (store) => store.close().then(() => null),
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(StoreRefusedError);
      expect((error as StoreRefusedError).code).toBe('SCHEMA_NOT_APPLIED');
      expect((error as Error).message).toMatch(new RegExp(`schema "${theirs}" was asked for`));
      expect(
        await admin.count(
          `SELECT count(*) FROM information_schema.tables WHERE table_name = 'runs' AND table_schema IN ('public', $1)`,
          [theirs],
        ),
      ).toBe(0);
    } finally {
      await admin.query(`DROP SCHEMA IF EXISTS ${theirs} CASCADE`);
      await admin.query(`REVOKE ALL ON DATABASE ${new URL(TEST_DATABASE_URL).pathname.slice(1)} FROM ${role}`);
      await admin.query(`DROP ROLE IF EXISTS ${role}`);
      await admin.end();
    }
  });
});
