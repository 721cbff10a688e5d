/**
 * A SQLite store as a migration found it: a file migrated up to, not including, the migration `tag`, open for
 * the test to put rows in the layout of then. The caller closes it, then opens the store, which migrates it.
 */
import Database from 'better-sqlite3';
import { migrationsOf } from '../../lib/store/migrate/runner';
import { migrateSqlite } from '../../lib/store/sqlite/migrate';

export function sqliteBefore(path: string, tag: string): Database.Database {
  const all = migrationsOf('sqlite');
  const at = all.findIndex((m) => m.tag === tag);
  if (at < 0) throw new Error(`no SQLite migration ${tag}`);
  const db = new Database(path);
  db.pragma('journal_mode = WAL');
  migrateSqlite(db, all.slice(0, at), 1);
  return db;
}
