/**
 * better-sqlite3, loaded as the first SQLite file is opened and not before. It is an optional dependency (npm
 * drops it when its native build fails, and `--omit=optional` leaves it out), so a project on PostgreSQL may not
 * have it, and must not need it to build either: a static import here is one every bundler of the package
 * resolves at build time. A require and not import(), because a SQLite store opens synchronously. The package
 * build marks it for webpack and Turbopack to leave to Node (scripts/build-package.ts), and fails on any other
 * load of better-sqlite3 in dist.
 */
import { createRequire } from 'node:module';
import type Database from 'better-sqlite3';
import { DriverMissingError } from '../../errors';
import { isDriverMissing } from '../shared/driver-missing';

/** What a project without better-sqlite3 is told to run: the major version package.json's range allows. */
const SQLITE_INSTALL = 'better-sqlite3@12';

let driver: typeof Database | undefined;

/** A better-sqlite3 handle on `path`; without better-sqlite3 installed, a DriverMissingError naming the install. */
export function openSqliteFile(path: string, options?: Database.Options): Database.Database {
  if (!driver) {
    try {
      driver = createRequire(import.meta.url)('better-sqlite3') as typeof Database;
    } catch (error) {
      if (isDriverMissing(error, 'better-sqlite3'))
        throw new DriverMissingError('better-sqlite3', `file:${path}`, error, SQLITE_INSTALL);
      throw error;
    }
  }
  return new driver(path, options);
}
