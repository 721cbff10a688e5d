/**
 * SQLite's half of the migration runner (migrate/runner.ts): BEGIN IMMEDIATE is the lock, sqlite_master says
 * which tables exist, and an unreadable ledger is refused rather than taken for an empty one.
 *
 * Every step answers at once (runMigrationsSync), so the store still opens synchronously. Inspecting takes no
 * write lock (a plain BEGIN), so it works on a file opened read-only.
 */
import { resolve } from 'node:path';
import type Database from 'better-sqlite3';
import { StoreRefusedError } from '../../errors';
import { type Migration, type MigrationPlan, runMigrationsSync } from '../migrate/runner';

export function migrateSqlite(
  db: Database.Database,
  migrations: Migration[],
  nowSeconds: number,
  mode: 'apply' | 'inspect' = 'apply',
): MigrationPlan {
  const tableExists = db.prepare<[string], { n: number }>(
    `SELECT count(*) AS n FROM sqlite_master WHERE type = 'table' AND name = ?`,
  );
  return runMigrationsSync(
    {
      begin: () => void db.exec(mode === 'apply' ? 'BEGIN IMMEDIATE' : 'BEGIN'),
      commit: () => void db.exec('COMMIT'),
      rollback: () => {
        if (db.inTransaction) db.exec('ROLLBACK');
      },
      appliedTags: () => (tableExists.get('waybill_migrations')!.n > 0 ? readLedger(db) : null),
      createLedger: () =>
        void db.exec(
          'CREATE TABLE waybill_migrations (tag TEXT PRIMARY KEY, hash TEXT NOT NULL, applied_at REAL NOT NULL)',
        ),
      tablesPresent: (names) => names.filter((t) => tableExists.get(t)!.n > 0),
      where: () => `SQLite file ${db.name === ':memory:' ? db.name : resolve(db.name)}`,
      setAside: (table) => void db.exec(`ALTER TABLE "${table}" RENAME TO "article_${table}"`),
      exec: (statement) => void db.exec(statement),
      record: (m) =>
        void db
          .prepare('INSERT INTO waybill_migrations (tag, hash, applied_at) VALUES (?, ?, ?)')
          .run(m.tag, m.hash, nowSeconds),
    },
    migrations,
    mode,
  );
}

/**
 * The ledger's tags, read from the table itself: `SELECT tag` alone is answered from the primary key's index,
 * so a ledger whose table page was zeroed still "read" fine and the store opened as if nothing were wrong.
 */
function readLedger(db: Database.Database): string[] {
  try {
    return db
      .prepare<[], { tag: string; hash: string }>('SELECT tag, hash FROM waybill_migrations NOT INDEXED')
      .all()
      .map((r) => r.tag);
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    if (code !== 'SQLITE_CORRUPT' && code !== 'SQLITE_NOTADB') throw error;
    throw new StoreRefusedError(
      'STORE_LEDGER_DAMAGED',
      `SQLite store ${db.name}: its migration ledger waybill_migrations is unreadable (${(error as Error).message}); ` +
        'restore the file from a backup; nothing was changed',
    );
  }
}
