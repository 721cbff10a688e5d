/**
 * Waybill inside someone else's database: its tables, functions and ledger go in a schema of its own (`waybill`
 * unless ?schema= or WAYBILL_PG_SCHEMA says otherwise), never in `public`, so an application's own `runs` table
 * is left exactly as it was. A store an older Waybill made in `public` keeps working there, named as such, and
 * `waybill migrate --move-to-schema` moves it out. Each test has a database of its own.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineWorkflow, WorkflowRegistry } from '../../lib/engine/workflow';
import { StoreRefusedError } from '../../lib/errors';
import type { Store } from '../../lib/store/contract';
import { openBackend, openStore } from '../../lib/store/index';
import { migrationsOf } from '../../lib/store/migrate/runner';
import { POSTGRES_FUNCTIONS } from '../../lib/store/postgres/functions/index';
import { runCli } from '../cli/support';
import { postgresAvailable, type TestDatabase, testDatabase } from '../support/postgres';
import { runToEnd } from '../workflows/harness';

const up = await postgresAvailable('PostgreSQL schema tests');

const registry = new WorkflowRegistry([
  defineWorkflow({
    name: 'three-steps',
    input: z.object({}),
    async run(ctx) {
      for (const n of [1, 2, 3]) await ctx.step(`step-${n}`, async () => n);
    },
  }),
]);

/** The application's own table, with rows, a constraint, an index and a default: what Waybill must not touch. */
async function appTable(db: TestDatabase): Promise<void> {
  await db.query(`CREATE TABLE public.runs (
    id serial PRIMARY KEY, title text NOT NULL CHECK (title <> ''), started timestamptz DEFAULT now())`);
  await db.query('CREATE INDEX runs_title ON public.runs (title)');
  await db.query(`INSERT INTO public.runs (title, started) VALUES ('first', '2026-01-01'), ('second', '2026-01-02')`);
}

/** The table's definition (columns, constraints, indexes) and its rows, from the catalogs. */
async function snapshot(db: TestDatabase) {
  return {
    columns: await db.query(
      `SELECT column_name, data_type, is_nullable, column_default FROM information_schema.columns
       WHERE table_schema = 'public' AND table_name = 'runs' ORDER BY ordinal_position`,
    ),
    constraints: await db.query(
      `SELECT conname, pg_get_constraintdef(oid) AS def FROM pg_constraint
       WHERE conrelid = 'public.runs'::regclass ORDER BY conname`,
    ),
    indexes: await db.query(
      `SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = 'public' ORDER BY indexname`,
    ),
    triggers: await db.query(`SELECT tgname FROM pg_trigger WHERE tgrelid = 'public.runs'::regclass ORDER BY tgname`),
    rows: await db.query('SELECT id, title, started::text FROM public.runs ORDER BY id'),
  };
}

/** Everything in `public` other than the application's own: relations and functions. */
async function inPublic(db: TestDatabase): Promise<string[]> {
  const rows = await db.query<{ name: string }>(
    `SELECT relname::text AS name FROM pg_class WHERE relnamespace = 'public'::regnamespace
     UNION ALL SELECT proname::text FROM pg_proc WHERE pronamespace = 'public'::regnamespace ORDER BY 1`,
  );
  return rows.map((r) => r.name);
}

async function withStore<T>(url: string, fn: (store: Store) => Promise<T>): Promise<T> {
  const store = await openStore(url);
  try {
    return await fn(store);
  } finally {
    await store.close();
  }
}

describe.skipIf(!up)('PostgreSQL schema', () => {
  it('runs a workflow to completion beside an app’s own `runs` table in public, which stays as it was', async () => {
    const db = await testDatabase();
    await appTable(db);
    const before = await snapshot(db);
    const publicBefore = await inPublic(db);

    const backend = await openBackend(db.url);
    try {
      expect(backend.dialect === 'postgres' && backend.schema).toBe('waybill');
      const row = await runToEnd(backend as never, registry, { workflow: 'three-steps', input: {}, id: 'beside-1' });
      expect(row.status).toBe('completed');
      expect((await backend.listCommitted('beside-1')).length).toBe(3);
    } finally {
      await backend.close();
    }

    expect(await snapshot(db)).toEqual(before);
    expect(await inPublic(db)).toEqual(publicBefore);
    const ours = await db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM pg_proc WHERE pronamespace = 'waybill'::regnamespace AND proname LIKE 'waybill\\_%'`,
    );
    expect(ours[0]!.n).toBe(POSTGRES_FUNCTIONS.statements.length);
    // docs/configuration.md counts what Waybill makes, for whoever grants rights or reviews the database.
    const said = /\((\d+) tables, its ledger `waybill_migrations` among them, and (\d+) functions\)/.exec(
      readFileSync(new URL('../../docs/configuration.md', import.meta.url), 'utf8').replace(/\s+/g, ' '),
    );
    const tables = await db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM information_schema.tables WHERE table_schema = 'waybill'`,
    );
    const functions = await db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM pg_proc WHERE pronamespace = 'waybill'::regnamespace`,
    );
    expect(said?.slice(1).map(Number)).toEqual([tables[0]!.n, functions[0]!.n]);
    const completed = await db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM waybill.runs WHERE status = 'completed'`,
    );
    expect(completed).toEqual([{ n: 1 }]);
  });

  it('WAYBILL_PG_SCHEMA (or ?schema=) names another schema; the two disagreeing is an error', async () => {
    const db = await testDatabase();
    await withStore(`${db.url}?schema=agents`, async (store) => {
      expect((await runToEnd(store as never, registry, { workflow: 'three-steps', input: {} })).status).toBe(
        'completed',
      );
    });
    const schemas = await db.query<{ nspname: string }>(
      `SELECT nspname FROM pg_namespace WHERE nspname IN ('agents', 'waybill', 'public') ORDER BY 1`,
    );
    expect(schemas.map((s) => s.nspname)).toEqual(['agents', 'public']);
    expect(await inPublic(db)).toEqual([]);
    const env = await runCli(['migrate', '--check'], { env: { DATABASE_URL: db.url, WAYBILL_PG_SCHEMA: 'agents' } });
    expect(env.stdout).toBe(
      `PostgreSQL schema "agents" of ${new URL(db.url).host}/${db.name} is up to date (${migrationsOf('pg').length} migrations)\n`,
    );
    expect(env.code).toBe(0);
    const both = await runCli(['runs'], {
      env: { DATABASE_URL: `${db.url}?schema=other`, WAYBILL_PG_SCHEMA: 'agents' },
    });
    expect(both.code).toBe(2);
    expect(both.stderr).toContain('DATABASE_URL asks for schema "other" and WAYBILL_PG_SCHEMA for "agents": give one');
  });

  it('calls an app’s table of Waybill’s name foreign, not damaged, when told to use public', async () => {
    const db = await testDatabase();
    await appTable(db);
    const before = await snapshot(db);
    const error = await openStore(`${db.url}?schema=public`).then(
      (s) => s.close().then(() => null),
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(StoreRefusedError);
    expect((error as StoreRefusedError).code).toBe('STORE_FOREIGN_TABLES');
    expect((error as Error).message).toContain("has tables of another application named like Waybill's (runs)");
    expect((error as Error).message).not.toContain('damaged');
    expect((error as Error).message).not.toContain('backup');
    expect(await snapshot(db)).toEqual(before);
    expect(await inPublic(db)).toEqual(['runs', 'runs_id_seq', 'runs_pkey', 'runs_title']);
  });

  it('makes no store in the schema an app’s own URL names (?schema=public), unless WAYBILL_PG_SCHEMA says so', async () => {
    const db = await testDatabase();
    // A Prisma-managed table, named like nothing of Waybill's, and the URL Prisma is given.
    await db.query(`CREATE TABLE public."User" (id serial PRIMARY KEY, email text NOT NULL)`);
    const appUrl = `${db.url}?schema=public`;
    const error = await openStore(appUrl).then(
      (s) => s.close().then(() => null),
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(StoreRefusedError);
    expect((error as StoreRefusedError).code).toBe('STORE_FOREIGN_TABLES');
    expect((error as Error).message).toBe(
      `PostgreSQL schema "public" of ${new URL(db.url).host}/${db.name}, named by ?schema= in DATABASE_URL, holds another application's ` +
        'tables (User): Waybill makes a new store only in a schema of its own. Leave ?schema= out of the URL you give ' +
        'Waybill (it then uses the schema waybill), or name an empty schema there or in WAYBILL_PG_SCHEMA; nothing ' +
        'was changed',
    );
    const cli = await runCli(['migrate'], { env: { DATABASE_URL: appUrl } });
    expect(cli.code).toBe(2);
    expect(cli.stderr).toContain("holds another application's tables (User)");
    expect(await inPublic(db)).toEqual(['User', 'User_id_seq', 'User_pkey']);
    const schemas = await db.query(`SELECT nspname FROM pg_namespace WHERE nspname = 'waybill'`);
    expect(schemas).toEqual([]);

    // Named on its own, the schema is taken as asked: the store is made beside the app's table.
    const told = await runCli(['migrate'], { env: { DATABASE_URL: db.url, WAYBILL_PG_SCHEMA: 'public' } });
    expect(told.code).toBe(0);
    expect(await inPublic(db)).toContain('waybill_migrations');
    // Once made, the URL's ?schema=public opens it: the rule is for making a store, not for using one.
    await withStore(appUrl, async (store) => {
      expect((await runToEnd(store as never, registry, { workflow: 'three-steps', input: {} })).status).toBe(
        'completed',
      );
    });
  });

  it('keeps using a store an older Waybill made in public, says so, and moves it with --move-to-schema', async () => {
    const db = await testDatabase();
    // What an older Waybill did: everything in public.
    await withStore(`${db.url}?schema=public`, async (store) => {
      await runToEnd(store as never, registry, { workflow: 'three-steps', input: {}, id: 'old-1' });
    });

    const check = await runCli(['migrate', '--check'], { env: { DATABASE_URL: db.url } });
    expect(check.code).toBe(0);
    expect(check.stdout).toContain('PostgreSQL schema "public"');
    expect(check.stderr).toContain('using the store an older Waybill made in schema "public"');
    const listed = await runCli(['runs', '--json'], { env: { DATABASE_URL: db.url } });
    expect(listed.code).toBe(0);
    expect((JSON.parse(listed.stdout) as { runs: { id: string }[] }).runs.map((r) => r.id)).toEqual(['old-1']);
    expect(listed.stderr.match(/older Waybill/g)?.length).toBe(1);
    expect(await db.query(`SELECT 1 FROM pg_namespace WHERE nspname = 'waybill'`)).toEqual([]);

    const moved = await runCli(['migrate', '--move-to-schema', 'waybill'], { env: { DATABASE_URL: db.url } });
    expect(moved.stderr).toBe('');
    expect(moved.code).toBe(0);
    // Every table the store had, counted where it now is.
    const tablesMoved = (
      await db.query(`SELECT count(*)::int AS n FROM information_schema.tables WHERE table_schema = 'waybill'`)
    )[0] as { n: number };
    expect(moved.stdout).toMatch(
      new RegExp(
        `^moved the store from schema "public" to "waybill": ${tablesMoved.n} tables, ${POSTGRES_FUNCTIONS.statements.length} functions`,
      ),
    );
    expect(await inPublic(db)).toEqual([]);

    // The default schema now: the old run's steps are there, and a new run completes (wakes, claims, commits).
    const backend = await openBackend(db.url);
    try {
      expect(backend.dialect === 'postgres' && backend.schema).toBe('waybill');
      expect((await backend.listCommitted('old-1')).length).toBe(3);
      const row = await runToEnd(backend as never, registry, { workflow: 'three-steps', input: {}, id: 'new-1' });
      expect(row.status).toBe('completed');
    } finally {
      await backend.close();
    }
    expect(await inPublic(db)).toEqual([]);
  });
});
