/**
 * PostgreSQL's half of the migration runner (migrations.ts): one transaction under pg_advisory_xact_lock,
 * so concurrent openers serialize: the first applies the migrations, the others find them recorded. The lock
 * is per schema, so stores in different schemas of one database migrate independently. An article table set
 * aside takes its indexes with it (progress_pkey would clash with ours).
 */
import type pg from 'pg';
import { StoreRefusedError } from '../../errors';
import { runMigrations, type Migration } from '../migrations';

const ident = (name: string) => `"${name.replace(/"/g, '""')}"`;

export async function migratePostgres(
  client: pg.PoolClient,
  migrations: Migration[],
  schema: string | undefined,
): Promise<void> {
  let current = schema ?? '';
  const exec = async (text: string, values: unknown[] = []) => void (await client.query(text, values));
  await runMigrations(
    {
      begin: async () => {
        await exec('BEGIN');
        await exec(
          `SELECT pg_advisory_xact_lock(hashtext('waybill.migrate'), hashtext(coalesce($1::text, current_schema(), '')))`,
          [schema ?? null],
        );
        if (schema) {
          await exec(`CREATE SCHEMA IF NOT EXISTS ${ident(schema)}`);
          // The schema arrives as a startup option; a pooler may refuse it (PgBouncer says so) or, told to ignore
          // `options`, drop it without a word, and the tables would be made and read wherever search_path points.
          const { rows } = await client.query<{ schema: string | null }>('SELECT current_schema() AS schema');
          if (rows[0]?.schema !== schema) {
            throw new StoreRefusedError(
              'SCHEMA_NOT_APPLIED',
              `PostgreSQL schema "${schema}" was asked for, but the connection's search_path leads to ` +
                `${rows[0]?.schema ? `"${rows[0].schema}"` : 'no schema'}: something between Waybill and the database ` +
                '(a pooler ignoring the `options` startup parameter?) dropped it. Behind a transaction pooler, give ' +
                'the role its search_path and leave ?schema= out (README: "Behind PgBouncer").',
            );
          }
        }
      },
      commit: () => exec('COMMIT'),
      rollback: () => exec('ROLLBACK'),
      appliedTags: async () => {
        await exec(`CREATE TABLE IF NOT EXISTS waybill_migrations (
        tag text PRIMARY KEY, hash text NOT NULL, applied_at double precision NOT NULL)`);
        return (await client.query<{ tag: string }>('SELECT tag FROM waybill_migrations')).rows.map((r) => r.tag);
      },
      /** In the schema this connection writes to (the first on its search_path). */
      tablesPresent: async (names) => {
        const { rows } = await client.query<{ schema: string; present: string[] }>(
          `SELECT current_schema() AS schema, coalesce((SELECT array_agg(table_name::text ORDER BY table_name)
           FROM information_schema.tables WHERE table_schema = current_schema() AND table_name = ANY($1::text[])), '{}') AS present`,
          [names],
        );
        current = rows[0]!.schema;
        return rows[0]!.present;
      },
      where: () => `PostgreSQL schema "${current}"`,
      setAside: async (table) => {
        const { rows } = await client.query<{ name: string }>(
          `SELECT i.relname AS name FROM pg_index x
           JOIN pg_class i ON i.oid = x.indexrelid
           JOIN pg_class t ON t.oid = x.indrelid
         WHERE t.relname = $1 AND t.relnamespace = current_schema()::regnamespace`,
          [table],
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
    },
    migrations,
  );
}
