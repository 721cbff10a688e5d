/**
 * Brings a SQLite file to the current schema under BEGIN IMMEDIATE, so concurrent openers serialize.
 * A file created by the reference article's three CREATE TABLE statements is adopted in the same
 * transaction: its tables are renamed aside, the first migration creates ours, the rows are copied over
 * column by column, and the old tables are dropped. Either all of that happens or none of it.
 */
import type Database from 'better-sqlite3';
import { ARTICLE_COLUMNS, ARTICLE_TABLES, type Migration } from './migrations';

const LEDGER = `CREATE TABLE IF NOT EXISTS waybill_migrations (
  tag TEXT PRIMARY KEY, hash TEXT NOT NULL, applied_at REAL NOT NULL)`;

export function migrateSqlite(db: Database.Database, migrations: Migration[], nowSeconds: number): void {
  const tableExists = db.prepare<[string], { n: number }>(
    `SELECT count(*) AS n FROM sqlite_master WHERE type = 'table' AND name = ?`,
  );
  const apply = db.transaction(() => {
    db.exec(LEDGER);
    const applied = new Set(
      db.prepare<[], { tag: string }>('SELECT tag FROM waybill_migrations').all().map((r) => r.tag),
    );
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
