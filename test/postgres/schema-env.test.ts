/**
 * The library opens the store the CLI and the workers open from the same environment: `openStore(DATABASE_URL)`
 * in an application whose workers run with WAYBILL_PG_SCHEMA reads and writes that schema's store, not a second
 * one made in `waybill` without a word. A missing URL is an error naming DATABASE_URL, not a TypeError.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { ConfigError, InvalidInputError } from '../../lib/errors';
import { openStore } from '../../lib/store/index';
import { runCli } from '../cli/support';
import { postgresAvailable, TEST_DATABASE_URL, testSchema } from '../support/postgres';

const up = await postgresAvailable('the library reading WAYBILL_PG_SCHEMA');
const before = process.env.WAYBILL_PG_SCHEMA;

afterEach(() => {
  if (before === undefined) delete process.env.WAYBILL_PG_SCHEMA;
  else process.env.WAYBILL_PG_SCHEMA = before;
});

describe.skipIf(!up)('openStore and WAYBILL_PG_SCHEMA', () => {
  it('opens the schema WAYBILL_PG_SCHEMA names when neither the URL nor the options name one', async () => {
    const schema = await testSchema('wb_env');
    process.env.WAYBILL_PG_SCHEMA = schema.name;
    const store = await openStore(TEST_DATABASE_URL);
    try {
      await store.createRun({ id: 'from-the-app', workflow: 'w', inputJson: '{}', totalSteps: 1 });
    } finally {
      await store.close();
    }
    expect(await schema.admin.query(`SELECT id FROM ${schema.t('runs')}`)).toEqual([{ id: 'from-the-app' }]);
    // The CLI, given the same environment, finds the run the application made.
    const cli = await runCli(['inspect', 'from-the-app', '--json'], {
      env: { DATABASE_URL: TEST_DATABASE_URL, WAYBILL_PG_SCHEMA: schema.name },
    });
    expect(cli.code).toBe(0);
    expect(JSON.parse(cli.stdout).run.id).toBe('from-the-app');
  });

  it('lets the options and the URL speak first, and refuses a URL that disagrees with the variable', async () => {
    const named = await testSchema('wb_env');
    const other = await testSchema('wb_env');
    process.env.WAYBILL_PG_SCHEMA = other.name;
    const store = await openStore(TEST_DATABASE_URL, { schema: named.name });
    await store.close();
    expect(await named.admin.query(`SELECT count(*)::int AS n FROM ${named.t('runs')}`)).toEqual([{ n: 0 }]);
    expect(await other.admin.query('SELECT 1 FROM pg_namespace WHERE nspname = $1', [other.name])).toEqual([]);

    const refused = await openStore(named.url).then(
      (s) => s.close().then(() => null),
      (e: unknown) => e,
    );
    expect(refused).toBeInstanceOf(InvalidInputError);
    expect((refused as Error).message).toBe(
      `DATABASE_URL asks for schema "${named.name}" and WAYBILL_PG_SCHEMA for "${other.name}": give one`,
    );
  });

  it('names the variable when it is not a schema name, and opens nothing', async () => {
    process.env.WAYBILL_PG_SCHEMA = 'Not-A-Schema';
    const refused = await openStore(TEST_DATABASE_URL).then(
      (s) => s.close().then(() => null),
      (e: unknown) => e,
    );
    expect(refused).toBeInstanceOf(ConfigError);
    expect((refused as Error).message).toBe(
      'invalid environment: WAYBILL_PG_SCHEMA: must be a lowercase SQL identifier (letters, digits, _), e.g. waybill',
    );
  });
});

describe('openStore without a URL', () => {
  it.each([undefined, ''])('says DATABASE_URL is missing for %j', async (url) => {
    const refused = await openStore(url as unknown as string).then(
      (s) => s.close().then(() => null),
      (e: unknown) => e,
    );
    expect(refused).toBeInstanceOf(InvalidInputError);
    expect((refused as Error).message).toBe(
      'openStore needs a store URL (file:<path> or postgres://…), got none: is DATABASE_URL set?',
    );
  });
});
