/**
 * Brings a PostgreSQL schema to the current version in one transaction under pg_advisory_xact_lock, so
 * concurrent openers serialize: the first applies the migrations, the others find them recorded. A schema
 * created by the reference article's three CREATE TABLE statements is adopted in the same transaction, as
 * sqlite-migrate.ts does: its tables (and their indexes, whose names would clash) are renamed aside, the
 * first migration creates ours, the article's columns are copied over, and the old tables are dropped.
 * Either all of that happens or none of it.
 */
import type pg from 'pg';
import { ARTICLE_COLUMNS, ARTICLE_TABLES, type Migration, refuseUnsafeLedger, waybillOnlyTables } from './migrations';

const LEDGER = `CREATE TABLE IF NOT EXISTS waybill_migrations (
  tag text PRIMARY KEY, hash text NOT NULL, applied_at double precision NOT NULL)`;

/** The lock is per schema: stores in different schemas of one database migrate independently. */
const LOCK = `SELECT pg_advisory_xact_lock(hashtext('waybill.migrate'), hashtext(coalesce($1::text, current_schema(), '')))`;

const ident = (name: string) => `"${name.replace(/"/g, '""')}"`;

export async function migratePostgres(client: pg.PoolClient, migrations: Migration[], schema: string | undefined): Promise<void> {
  await client.query('BEGIN');
  try {
    await client.query(LOCK, [schema ?? null]);
    if (schema) await client.query(`CREATE SCHEMA IF NOT EXISTS ${ident(schema)}`);
    await client.query(LEDGER);
    const tags = (await client.query<{ tag: string }>('SELECT tag FROM waybill_migrations')).rows.map((r) => r.tag);
    const ours = await tablesPresent(client, waybillOnlyTables(migrations));
    refuseUnsafeLedger(migrations, tags, ours.present, `PostgreSQL schema "${ours.schema}"`);
    const applied = new Set(tags);
    const pending = migrations.filter((m) => !applied.has(m.tag));
    if (pending.length === 0) {
      await client.query('COMMIT');
      return;
    }

    const adopted = applied.size === 0 ? await articleTables(client) : [];
    for (const table of adopted) await setAside(client, table);

    for (const migration of pending) {
      for (const statement of migration.statements) await client.query(statement);
      await client.query(
        'INSERT INTO waybill_migrations (tag, hash, applied_at) VALUES ($1, $2, extract(epoch from now()))',
        [migration.tag, migration.hash],
      );
    }

    for (const table of adopted) {
      const columns = ARTICLE_COLUMNS[table].map(ident).join(', ');
      await client.query(`INSERT INTO ${ident(table)} (${columns}) SELECT ${columns} FROM ${ident(`article_${table}`)}`);
      await client.query(`DROP TABLE ${ident(`article_${table}`)}`);
    }
    await client.query('COMMIT');
  } catch (error) {
    // A connection that died mid-transaction cannot roll back; the server already has.
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  }
}

type ArticleTable = (typeof ARTICLE_TABLES)[number];

/** The article's tables present in the schema this connection writes to (the first on its search_path). */
async function articleTables(client: pg.PoolClient): Promise<ArticleTable[]> {
  const { present } = await tablesPresent(client, [...ARTICLE_TABLES]);
  return ARTICLE_TABLES.filter((t) => present.includes(t));
}

/** Which of these tables the schema this connection writes to has, and that schema's name. */
async function tablesPresent(client: pg.PoolClient, names: string[]): Promise<{ schema: string; present: string[] }> {
  const { rows } = await client.query<{ schema: string; present: string[] }>(
    `SELECT current_schema() AS schema, coalesce((SELECT array_agg(table_name::text ORDER BY table_name)
       FROM information_schema.tables WHERE table_schema = current_schema() AND table_name = ANY($1::text[])), '{}') AS present`,
    [names],
  );
  return rows[0]!;
}

/** Renames the table and its indexes (progress_pkey would clash with ours) to article_<name>. */
async function setAside(client: pg.PoolClient, table: string): Promise<void> {
  const { rows } = await client.query<{ name: string }>(
    `SELECT i.relname AS name FROM pg_index x
       JOIN pg_class i ON i.oid = x.indexrelid
       JOIN pg_class t ON t.oid = x.indrelid
     WHERE t.relname = $1 AND t.relnamespace = current_schema()::regnamespace`,
    [table],
  );
  await client.query(`ALTER TABLE ${ident(table)} RENAME TO ${ident(`article_${table}`)}`);
  for (const { name } of rows) await client.query(`ALTER INDEX ${ident(name)} RENAME TO ${ident(`article_${name}`)}`);
}
