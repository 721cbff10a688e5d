/**
 * Moves a store from one schema to another (`waybill migrate --move-to-schema`): what a store an older Waybill
 * made in `public` needs to leave the application's tables alone. One transaction: ALTER TABLE … SET SCHEMA for
 * the ledger and every table the migrations create (their indexes, constraints and triggers go with them), and
 * ALTER FUNCTION … SET SCHEMA for Waybill's functions. The functions name tables unqualified and find them
 * through the caller's search_path, and the wake channel is computed from the table's schema, so both follow.
 */
import pg from 'pg';
import { InvalidInputError, StoreRefusedError } from '../../errors';
import { migrationsOf, waybillOnlyTables } from '../migrate/runner';
import { clientConfig } from './connection';

export interface Moved {
  tables: string[];
  functions: string[];
}

const ident = (name: string) => `"${name.replace(/"/g, '""')}"`;

export async function moveStoreSchema(url: string, from: string, to: string): Promise<Moved> {
  if (from === to) throw new InvalidInputError(`the store is in schema "${from}" already`);
  clientConfig(url, to); // the same identifier check the store's connections make
  const client = new pg.Client(clientConfig(url, undefined));
  await client.connect();
  try {
    await client.query('BEGIN');
    // The migration lock of both schemas: no Waybill migrates either while the tables move.
    for (const schema of [from, to].sort()) {
      await client.query(`SELECT pg_advisory_xact_lock(hashtext('waybill.migrate'), hashtext($1::text))`, [schema]);
    }
    const ours = ['waybill_migrations', ...waybillOnlyTables(migrationsOf('pg')), 'progress', 'committed', 'claims'];
    const present = async (schema: string) =>
      (
        await client.query<{ name: string }>(
          `SELECT table_name::text AS name FROM information_schema.tables
           WHERE table_schema = $1 AND table_name = ANY($2::text[]) ORDER BY table_name`,
          [schema, ours],
        )
      ).rows.map((r) => r.name);
    const tables = await present(from);
    if (!tables.includes('waybill_migrations')) {
      throw new StoreRefusedError(
        'STORE_MISSING',
        `no Waybill store in PostgreSQL schema "${from}" (no waybill_migrations there); nothing was changed`,
      );
    }
    const clash = await present(to);
    if (clash.length > 0) {
      throw new StoreRefusedError(
        'STORE_FOREIGN_TABLES',
        `PostgreSQL schema "${to}" already has tables named like Waybill's (${clash.join(', ')}); nothing was changed`,
      );
    }
    await client.query(`CREATE SCHEMA IF NOT EXISTS ${ident(to)}`);
    for (const table of tables)
      await client.query(`ALTER TABLE ${ident(from)}.${ident(table)} SET SCHEMA ${ident(to)}`);
    const { rows } = await client.query<{ signature: string; name: string }>(
      `SELECT p.oid::regprocedure::text AS signature, p.proname::text AS name FROM pg_proc p
       WHERE p.pronamespace = $1::regnamespace AND p.proname LIKE 'waybill\\_%' ORDER BY p.proname`,
      [ident(from)],
    );
    for (const { signature } of rows) await client.query(`ALTER FUNCTION ${signature} SET SCHEMA ${ident(to)}`);
    await client.query('COMMIT');
    return { tables, functions: rows.map((r) => r.name) };
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  } finally {
    await client.end().catch(() => undefined);
  }
}
