/**
 * The PostgreSQL functions live in lib/store/postgres/functions/ and are applied on open, under the migration
 * lock, whenever the store recorded another set: a store holds exactly these texts, one signature each, and is
 * not rewritten when it has them; with migration off a store with other functions is refused as a behind one is,
 * `migrate --check` says so and `--print-sql` prints them, and `migrate` (or an open that migrates) replaces them.
 */
import { describe, expect, it, onTestFinished } from 'vitest';
import { StoreRefusedError } from '../../lib/errors';
import { inspectStore } from '../../lib/store/index';
import { openPostgresStore } from '../../lib/store/postgres';
import { POSTGRES_FUNCTIONS } from '../../lib/store/postgres/functions/index';
import { runCli } from '../cli/support';
import { postgresAvailable, type TestSchema, testSchema, testUrl } from '../support/postgres';

const pgUp = await postgresAvailable('PostgreSQL function tests');

async function open(schema: TestSchema, migrate = true) {
  const store = await openPostgresStore({ url: testUrl(), schema: schema.name, migrate, poolSize: 2 });
  onTestFinished(() => store.close());
  return store;
}

/** Each of the schema's functions: its name, how many signatures it has, and its row version in pg_proc. */
const catalog = (schema: TestSchema) =>
  schema.admin.query<{ name: string; signatures: number; versions: string }>(
    `SELECT proname::text AS name, count(*)::int AS signatures, string_agg(xmin::text, ',') AS versions
     FROM pg_proc WHERE pronamespace = $1::regnamespace GROUP BY proname ORDER BY proname`,
    [`"${schema.name}"`],
  );

/** The body between the $$ of each statement, by function name: what pg_proc.prosrc holds. */
const bodies = Object.fromEntries(
  POSTGRES_FUNCTIONS.statements.map((s) => [/FUNCTION (\w+)\(/.exec(s)![1]!, s.split('$$')[1]!]),
);

describe.skipIf(!pgUp)('postgres functions', () => {
  it('holds exactly the functions of functions/, one signature each, and rewrites none on a second open', async () => {
    const schema = await testSchema();
    await (await open(schema)).close();
    const first = await catalog(schema);
    expect(first.map((f) => [f.name, f.signatures])).toEqual(
      Object.keys(bodies)
        .sort()
        .map((name) => [name, 1]),
    );
    const stored = await schema.admin.query<{ name: string; body: string }>(
      `SELECT proname::text AS name, prosrc AS body FROM pg_proc WHERE pronamespace = $1::regnamespace`,
      [`"${schema.name}"`],
    );
    expect(Object.fromEntries(stored.map((f) => [f.name, f.body]))).toEqual(bodies);
    expect(await schema.admin.query(`SELECT hash FROM ${schema.t('waybill_functions')}`)).toEqual([
      { hash: POSTGRES_FUNCTIONS.hash },
    ]);

    await open(schema);
    expect(await catalog(schema)).toEqual(first);
  });

  it('refuses other functions with migration off, changing nothing; migrate replaces them', async () => {
    const schema = await testSchema();
    await (await open(schema)).close();
    // What an older Waybill of the same migrations left: another body, another hash.
    await schema.admin.query(`CREATE OR REPLACE FUNCTION ${schema.t('waybill_notify_runnable')}() RETURNS trigger
      LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$`);
    await schema.admin.query(`UPDATE ${schema.t('waybill_functions')} SET hash = 'older', version = version - 1`);
    const before = await catalog(schema);

    const refused = await open(schema, false).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(StoreRefusedError);
    expect((refused as StoreRefusedError).code).toBe('STORE_BEHIND');
    expect((refused as Error).message).toMatch(/runs other versions of Waybill's functions .*`waybill migrate`/);
    const plan = await inspectStore(schema.url);
    expect(plan.pending).toEqual([]);
    expect(plan.functions?.hash).toBe(POSTGRES_FUNCTIONS.hash);

    const env = { DATABASE_URL: schema.url };
    const check = await runCli(['migrate', '--check'], { env });
    expect(check.code).toBe(1);
    expect(check.stdout).toContain("runs other versions of Waybill's functions");
    const printed = await runCli(['migrate', '--print-sql'], { env });
    expect(printed.stdout.match(/^(-- .*|CREATE OR REPLACE FUNCTION \w+)/gm)).toEqual([
      `-- functions ${POSTGRES_FUNCTIONS.hash}`,
      ...POSTGRES_FUNCTIONS.statements.map((s) => /^CREATE OR REPLACE FUNCTION \w+/.exec(s)![0]),
    ]);
    expect(await catalog(schema)).toEqual(before);
    expect(await schema.admin.query(`SELECT hash FROM ${schema.t('waybill_functions')}`)).toEqual([{ hash: 'older' }]);

    const migrated = await runCli(['migrate'], { env });
    expect(migrated).toMatchObject({ code: 0, stdout: expect.stringMatching(/^replaced the functions of /) });
    const [notify] = await schema.admin.query<{ body: string }>(
      `SELECT prosrc AS body FROM pg_proc WHERE oid = $1::regproc`,
      [schema.t('waybill_notify_runnable')],
    );
    expect(notify!.body).toBe(bodies.waybill_notify_runnable);
    expect(await schema.admin.query(`SELECT hash FROM ${schema.t('waybill_functions')}`)).toEqual([
      { hash: POSTGRES_FUNCTIONS.hash },
    ]);
    await open(schema, false);
  });

  it("keeps a newer Waybill's functions: an older build neither replaces nor refuses them", async () => {
    const schema = await testSchema();
    await (await open(schema)).close();
    // A newer release of the same migrations, in a rolling upgrade beside this one: same signatures, newer text.
    await schema.admin.query(`CREATE OR REPLACE FUNCTION ${schema.t('waybill_notify_runnable')}() RETURNS trigger
      LANGUAGE plpgsql AS $$ BEGIN RETURN NEW; END $$`);
    await schema.admin.query(`UPDATE ${schema.t('waybill_functions')} SET hash = 'newer', version = version + 1`);
    const before = await catalog(schema);

    await (await open(schema, false)).close();
    await (await open(schema)).close();
    expect((await inspectStore(schema.url)).functions).toBeNull();
    expect(await catalog(schema)).toEqual(before);
    expect(await schema.admin.query(`SELECT hash, version FROM ${schema.t('waybill_functions')}`)).toEqual([
      { hash: 'newer', version: POSTGRES_FUNCTIONS.version + 1 },
    ]);
  });
});

describe('the function set', () => {
  it('raises its version whenever a text changes', () => {
    // Each version's hash, pinned. A changed text fails here: raise POSTGRES_FUNCTIONS.version and pin the new
    // hash beside the old ones, or stores that have this version would keep the old text.
    const PINNED: Record<number, string> = {
      1: '95643925ecfa420f5c58de74a4cd494c3dab919465184558817feb947e72038c',
      2: '25053f561179e1d8d0b1d16e372312171a0f23eac671ac88251b4935d43d603e',
      3: '975f15c3f2d96e604ab5bcacf864b2271e794ea81b2551cc4ced97ca8574dd98',
      4: '95128f577afe311a35e2597af1324bdec4f115574c50a9e8aa74d7a6b501bc00',
      5: 'dd5148dda823dd51ecab1339106e1e2309326639373be167e07939afab6e7d3e',
      6: '9c970ee41068aac43fc673e60274d5e1f56920d9cd2e5dc30ca60514b5036939',
      7: '41eff7b5e7c1bd6f5bc04370349f3073dfc1091c783bf3c6ff0a1ad61b88987e',
      8: '273eccc2228ce2ccc9d84afb00d0d5157b1951badd6b6ae9bef8648a04435e3e',
      9: '9cbd56e36705fed374b39ef626ea5b293fb9115d93af88b9171ca81e4b6d0f90',
      10: '486a3aa0f76eb55dbbe96e78f2bd975e9da0759950fe7437b74162fb515dbdd8',
      11: '3cfa0b476e20182e1b1d7d74ca95b481777fdf9c4b9e7607b951892abd1a1683',
      12: '67db0ed79c016688f18ffc790b0f99d6d94013734a86a555254a174fc7bfd4fd',
    };
    expect(POSTGRES_FUNCTIONS.hash).toBe(PINNED[POSTGRES_FUNCTIONS.version]);
  });
});
