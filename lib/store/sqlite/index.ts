/**
 * The embedded backend: one SQLite file in WAL mode, shared by every process on the machine. One object,
 * composed of the operation files (each a function of the connection, each one concern), never a chain of
 * classes: a method is found in the file its interface names.
 */
import type Database from 'better-sqlite3';
import type { Clock } from '../../clock';
import { findMigrationsDir, readMigrations } from '../migrations';
import type { Store } from '../types';
import { sqliteAudit } from './audit';
import { sqliteClaims } from './claims';
import { openSqliteConnection, type SqliteOpenOptions } from './connection';
import { sqliteLogs } from './logs';
import { sqliteMetrics } from './metrics';
import { migrateSqlite } from './migrate';
import { sqliteModelCalls } from './model-calls';
import { wakeWatcher } from './notify';
import { sqliteReads } from './reads';
import { sqliteRetention } from './retention';
import { sqliteRewind } from './rewind';
import { sqliteRuns } from './runs';
import { sqliteSteps, type SqliteStepsOptions, type WriteCounts } from './steps';
import { sqliteWorkers } from './workers';
import { sqliteWaits } from './waits';
import { sqliteWorkflows } from './workflows';

export interface SqliteStoreOptions extends SqliteOpenOptions, SqliteStepsOptions {
  migrationsDir?: string;
}

/** The full Store, and the file's handle for what only SQLite has (tests, the demo seed, a backup). */
export interface SqliteStore extends Store {
  readonly dialect: 'sqlite';
  readonly db: Database.Database;
  readonly clock: Clock;
  /** Write transactions committed since open, and what group commit put in them (tests, the bench). */
  writeCounts(): WriteCounts;
}

/** Opens (creating if needed) and migrates the file. Synchronous: better-sqlite3 is. */
export function openSqliteStore(options: SqliteStoreOptions): SqliteStore {
  const c = openSqliteConnection(options);
  try {
    migrateSqlite(c.db, readMigrations(findMigrationsDir('sqlite', options.migrationsDir)), c.now());
  } catch (error) {
    c.db.close();
    throw error;
  }
  const wakes = wakeWatcher({ path: options.path, clock: c.clock });
  const { inBatch, ...steps } = sqliteSteps(c, { groupCommit: options.groupCommit });
  return {
    dialect: 'sqlite',
    db: c.db,
    clock: c.clock,
    ...steps,
    ...sqliteClaims(c),
    ...sqliteRuns(c, inBatch),
    ...sqliteWorkers(c),
    ...sqliteWorkflows(c),
    ...sqliteReads(c),
    ...sqliteMetrics(c),
    ...sqliteAudit(c),
    ...sqliteRetention(c),
    ...sqliteRewind(c),
    ...sqliteWaits(c),
    ...sqliteLogs(c),
    ...sqliteModelCalls(c),
    subscribeWakes: (onWake) => wakes.subscribe(onWake),
    async close() {
      wakes.close();
      if (c.db.open) c.db.close();
    },
  };
}
