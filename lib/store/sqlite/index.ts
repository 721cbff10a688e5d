/**
 * The embedded backend: one SQLite file in WAL mode, shared by every process on the machine. One object,
 * composed of the operation files (each a function of the connection, each one concern), never a chain of
 * classes: a method is found in the file its interface names.
 */
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import type Database from 'better-sqlite3';
import type { Clock } from '../../clock';
import type { Store } from '../contract';
import { type MigrationPlan, migrationsOf, notCurrent } from '../migrate/runner';
import { sqliteAudit } from './audit';
import { sqliteClaims } from './claims';
import { openSqliteConnection, type SqliteOpenOptions } from './connection';
import { openSqliteFile } from './driver';
import { sqliteEvents } from './events';
import { sqliteLogs } from './logs';
import { sqliteMetrics } from './metrics';
import { migrateSqlite } from './migrate';
import { sqliteModelCalls } from './model-calls';
import { wakeWatcher } from './notify';
import { sqliteReads } from './reads';
import { sqliteRetention } from './retention';
import { sqliteRewind } from './rewind';
import { sqliteRunTags } from './run-tags';
import { sqliteRuns } from './runs';
import { sqliteSchedules } from './schedules';
import { sqliteStepStreams } from './step-streams';
import { type SqliteStepsOptions, sqliteSteps, type WriteCounts } from './steps';
import { sqliteWaits } from './waits';
import { sqliteWebhooks } from './webhooks';
import { sqliteWorkers } from './workers';
import { sqliteWorkflows } from './workflows';

export interface SqliteStoreOptions extends Omit<SqliteOpenOptions, 'create'>, SqliteStepsOptions {
  /**
   * Create or upgrade the file on open (the default). False: open it only if it is a current Waybill store, and
   * refuse (StoreRefusedError, nothing written) a missing file or one that is behind: read-only commands,
   * WAYBILL_MIGRATE=off.
   */
  migrate?: boolean;
}

/** The full Store, and the file's handle for what only SQLite has (tests, the demo seed, a backup). */
export interface SqliteStore extends Store {
  readonly dialect: 'sqlite';
  readonly db: Database.Database;
  readonly clock: Clock;
  /** Write transactions committed since open, and what group commit put in them (tests, the bench). */
  writeCounts(): WriteCounts;
}

/** Opens (creating if needed) and migrates the file, unless told not to migrate. Synchronous: better-sqlite3 is. */
export function openSqliteStore(options: SqliteStoreOptions): SqliteStore {
  const migrate = options.migrate ?? true;
  if (!migrate) refuseMissing(options.path);
  const c = openSqliteConnection({ ...options, create: migrate });
  try {
    const migrations = migrationsOf('sqlite');
    const plan = migrateSqlite(c.db, migrations, c.now(), migrate ? 'apply' : 'inspect');
    const refusal = migrate ? null : notCurrent(plan, migrations);
    if (refusal) throw refusal;
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
    ...sqliteRunTags(c),
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
    ...sqliteStepStreams(c),
    ...sqliteSchedules(c),
    ...sqliteEvents(c),
    ...sqliteWebhooks(c),
    subscribeWakes: (onWake) => wakes.subscribe(onWake),
    async close() {
      wakes.close();
      if (c.db.open) c.db.close();
    },
  };
}

/** What `waybill migrate --check` and `--print-sql` read: the file's ledger, opened read-only; nothing is created. */
export function inspectSqliteStore(path: string): MigrationPlan {
  const migrations = migrationsOf('sqlite');
  const where = `SQLite file ${resolve(path)}`;
  if (path === ':memory:' || !existsSync(path)) {
    return { where, exists: false, applied: [], pending: migrations, adopted: [], functions: null };
  }
  const db = openSqliteFile(path, { readonly: true, fileMustExist: true });
  try {
    return migrateSqlite(db, migrations, 0, 'inspect');
  } finally {
    db.close();
  }
}

function refuseMissing(path: string): void {
  if (path !== ':memory:' && existsSync(path)) return;
  const plan = inspectSqliteStore(path);
  throw notCurrent(plan, migrationsOf('sqlite'))!;
}
