/**
 * Where the two backends differ, in one table (pg-boss keeps its BACKEND_PROFILES so): the shared SQL
 * fragments (sql-shared.ts) read these flags instead of each backend keeping its own copy of a statement.
 */
import type { Dialect } from './types';

export interface DialectFlags {
  /** How a statement names the i-th (0-based) positional value: `@b0` binds by name on better-sqlite3, `$1` on pg. */
  param(name: string, index: number): string;
  /** A cast that makes a count or sum come back as a JS number: pg hands bigint and numeric over as strings. */
  int: string;
  float: string;
  /** Text compared in byte order, as SQLite compares it, so keyset pages agree across backends. */
  byteOrder: string;
  /** Whose clock decides a lease: the injected one (SQLite, one machine) or the database's (many hosts). */
  clock: 'store' | 'database';
  /** Whether a dead worker's lock is released by the database itself (a session advisory lock). */
  livenessLocks: boolean;
}

export const DIALECTS: Record<Dialect, DialectFlags> = {
  sqlite: { param: (name) => `@${name}`, int: '', float: '', byteOrder: '', clock: 'store', livenessLocks: false },
  postgres: {
    param: (_, index) => `$${index + 1}::float8`, int: '::int', float: '::float8', byteOrder: ' COLLATE "C"',
    clock: 'database', livenessLocks: true,
  },
};
