/**
 * PostgreSQL's half of the migration runner (migrate/runner.ts): one transaction under pg_advisory_xact_lock,
 * so concurrent openers serialize: the first applies the migrations, the others find them recorded. The lock
 * is per schema, so stores in different schemas of one database migrate independently. An article table set
 * aside takes its indexes with it (progress_pkey would clash with ours). Inspecting is a READ ONLY transaction
 * that takes no lock and creates nothing, not even the schema. The functions (functions/) are replaced in the same
 * transaction, after the migrations, when waybill_functions holds an older set (migrate/runner.ts, FunctionSet).
 */
import type pg from 'pg';
import { StoreRefusedError } from '../../errors';
import { type Migration, type MigrationPlan, runMigrations } from '../migrate/runner';
import { POSTGRES_FUNCTIONS } from './functions/index';

const ident = (name: string) => `"${name.replace(/"/g, '""')}"`;

export async function migratePostgres(
  client: pg.PoolClient | pg.Client,
  migrations: Migration[],
  schema: string,
  {
    mode = 'apply',
    database,
    alone = false,
  }: {
    mode?: 'apply' | 'inspect';
    database?: string;
    /** A new store is made only where no other application's tables are (PostgresStoreOptions.schemaFromUrl). */
    alone?: boolean;
  } = {},
): Promise<MigrationPlan> {
  const exec = async (text: string, values: unknown[] = []) => void (await client.query(text, values));
  return runMigrations(
    {
      begin: async () => {
        if (mode === 'inspect') {
          await exec('BEGIN READ ONLY');
        } else {
          await exec('BEGIN');
          await exec(`SELECT pg_advisory_xact_lock(hashtext('waybill.migrate'), hashtext($1::text))`, [schema]);
          await exec(`CREATE SCHEMA IF NOT EXISTS ${ident(schema)}`);
        }
        // The schema arrives as a startup option; a pooler may refuse it (PgBouncer says so) or, told to ignore
        // `options`, drop it without a word, and the tables would be made and read wherever search_path points.
        // A schema not made yet is no schema at all to current_schema() (inspecting a fresh database).
        const { rows } = await client.query<{ schema: string | null }>('SELECT current_schema() AS schema');
        const seen = rows[0]?.schema ?? null;
        if (seen !== schema && !(mode === 'inspect' && seen === null)) {
          throw new StoreRefusedError(
            'SCHEMA_NOT_APPLIED',
            `PostgreSQL schema "${schema}" was asked for, but the connection's search_path leads to ` +
              `${seen ? `"${seen}"` : 'no schema'}: something between Waybill and the database ` +
              '(a pooler ignoring the `options` startup parameter?) dropped it. Behind a transaction pooler, give ' +
              'the role its search_path and leave ?schema= out (docs/operations.md: "Behind PgBouncer").',
          );
        }
      },
      commit: () => exec('COMMIT'),
      rollback: () => exec('ROLLBACK'),
      appliedTags: async () => {
        const { rows } = await client.query<{ present: boolean }>(
          `SELECT to_regclass(format('%I.waybill_migrations', $1::text)) IS NOT NULL AS present`,
          [schema],
        );
        if (!rows[0]?.present) return null;
        return (await client.query<{ tag: string }>(`SELECT tag FROM ${ident(schema)}.waybill_migrations`)).rows.map(
          (r) => r.tag,
        );
      },
      createLedger: () =>
        exec(`CREATE TABLE ${ident(schema)}.waybill_migrations (
          tag text PRIMARY KEY, hash text NOT NULL, applied_at double precision NOT NULL)`),
      tablesPresent: async (names) => {
        const { rows } = await client.query<{ present: string[] }>(
          `SELECT coalesce((SELECT array_agg(table_name::text ORDER BY table_name) FROM information_schema.tables
           WHERE table_schema = $1 AND table_name = ANY($2::text[])), '{}') AS present`,
          [schema, names],
        );
        return rows[0]!.present;
      },
      ...(alone && {
        tablesBesides: async (names: readonly string[]) => {
          const { rows } = await client.query<{ name: string }>(
            `SELECT table_name::text AS name FROM information_schema.tables
             WHERE table_schema = $1 AND NOT (table_name = ANY($2::text[])) ORDER BY table_name`,
            [schema, [...names, 'waybill_migrations', 'waybill_functions']],
          );
          return rows.map((r) => r.name);
        },
      }),
      where: () => `PostgreSQL schema "${schema}"${database ? ` of ${database}` : ''}`,
      setAside: async (table) => {
        const { rows } = await client.query<{ name: string }>(
          `SELECT i.relname AS name FROM pg_index x
           JOIN pg_class i ON i.oid = x.indexrelid
           JOIN pg_class t ON t.oid = x.indrelid
         WHERE t.relname = $1 AND t.relnamespace = $2::regnamespace`,
          [table, ident(schema)],
        );
        await exec(`ALTER TABLE ${ident(table)} RENAME TO ${ident(`article_${table}`)}`);
        for (const { name } of rows) await exec(`ALTER INDEX ${ident(name)} RENAME TO ${ident(`article_${name}`)}`);
      },
      exec: (statement) => exec(statement),
      record: (m) =>
        exec('INSERT INTO waybill_migrations (tag, hash, applied_at) VALUES ($1, $2, extract(epoch from now()))', [
          m.tag,
          m.hash,
        ]),
      functions: {
        wanted: POSTGRES_FUNCTIONS,
        recorded: async () => {
          const { rows } = await client.query<{ present: boolean }>(
            `SELECT to_regclass(format('%I.waybill_functions', $1::text)) IS NOT NULL AS present`,
            [schema],
          );
          if (!rows[0]?.present) return null;
          const recorded = await client.query<{ version: number; hash: string }>(
            `SELECT version, hash FROM ${ident(schema)}.waybill_functions`,
          );
          return recorded.rows[0] ?? null;
        },
        record: async (set) => {
          await exec(`DELETE FROM ${ident(schema)}.waybill_functions`);
          await exec(
            `INSERT INTO ${ident(schema)}.waybill_functions (version, hash, applied_at)
            VALUES ($1, $2, extract(epoch from now()))`,
            [set.version, set.hash],
          );
        },
      },
    },
    migrations,
    mode,
  );
}
