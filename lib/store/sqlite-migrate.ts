/**
 * Brings a SQLite file to the current schema under BEGIN IMMEDIATE, so concurrent openers serialize.
 * A file created by the reference article's three CREATE TABLE statements is adopted in the same
 * transaction: its tables are renamed aside, the first migration creates ours, the rows are copied over
 * column by column, and the old tables are dropped. Either all of that happens or none of it.
 */
import type Database from 'better-sqlite3';
import { StoreRefusedError } from '../errors';
import { ARTICLE_COLUMNS, ARTICLE_TABLES, type Migration, refuseUnsafeLedger, waybillOnlyTables } from './migrations';

const LEDGER = `CREATE TABLE IF NOT EXISTS waybill_migrations (
  tag TEXT PRIMARY KEY, hash TEXT NOT NULL, applied_at REAL NOT NULL)`;

export function migrateSqlite(db: Database.Database, migrations: Migration[], nowSeconds: number): void {
  const tableExists = db.prepare<[string], { n: number }>(
    `SELECT count(*) AS n FROM sqlite_master WHERE type = 'table' AND name = ?`,
  );
  const apply = db.transaction(() => {
    db.exec(LEDGER);
    const tags = readLedger(db);
    refuseUnsafeLedger(migrations, tags, waybillOnlyTables(migrations).filter((t) => tableExists.get(t)!.n > 0), `SQLite store ${db.name}`);
    const applied = new Set(tags);
    const pending = migrations.filter((m) => !applied.has(m.tag));
    if (pending.length === 0) return;

    const adopted =
      applied.size === 0 ? ARTICLE_TABLES.filter((t) => tableExists.get(t)!.n > 0) : [];
    for (const table of adopted) db.exec(`ALTER TABLE "${table}" RENAME TO "article_${table}"`);

    const record = db.prepare('INSERT INTO waybill_migrations (tag, hash, applied_at) VALUES (?, ?, ?)');
    for (const migration of pending) {
      for (const statement of migration.statements) db.exec(statement);
      record.run(migration.tag, migration.hash, nowSeconds);
    }

    for (const table of adopted) {
      const columns = ARTICLE_COLUMNS[table].map((c) => `"${c}"`).join(', ');
      db.exec(`INSERT INTO "${table}" (${columns}) SELECT ${columns} FROM "article_${table}"`);
      db.exec(`DROP TABLE "article_${table}"`);
    }
  });
  apply.immediate();
}

/**
 * The ledger's tags, read from the table itself: `SELECT tag` alone is answered from the primary key's index,
 * so a ledger whose table page was zeroed still "read" fine and the store opened as if nothing were wrong.
 */
function readLedger(db: Database.Database): string[] {
  try {
    return db.prepare<[], { tag: string; hash: string }>('SELECT tag, hash FROM waybill_migrations NOT INDEXED').all().map((r) => r.tag);
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    if (code !== 'SQLITE_CORRUPT' && code !== 'SQLITE_NOTADB') throw error;
    throw new StoreRefusedError('STORE_LEDGER_DAMAGED',
      `SQLite store ${db.name}: its migration ledger waybill_migrations is unreadable (${(error as Error).message}); ` +
      'restore the file from a backup; nothing was changed');
  }
}
