/**
 * Where the two dialects' shared SQL differs, in one table (pg-boss keeps its BACKEND_PROFILES so): the
 * fragments in sql.ts read these flags instead of each backend keeping its own copy of a statement.
 * What differs in behaviour rather than in spelling (whose clock judges a lease, how a dead worker is told)
 * is each backend's own, in its folder's files, with the reason beside it.
 */
import type { Dialect } from '../contract';

export interface DialectFlags {
  /** How a statement names a positional value: `@b0` binds by name on better-sqlite3, `$1` (cast) on pg. */
  param(name: string, index: number): string;
  /** A cast that makes a count come back as a JS number: pg hands bigint over as a string. */
  int: string;
  /** The same for sums and averages (numeric on pg). */
  float: string;
}

export const DIALECTS: Record<Dialect, DialectFlags> = {
  sqlite: { param: (name) => `@${name}`, int: '', float: '' },
  postgres: { param: (_, index) => `$${index + 1}::float8`, int: '::int', float: '::float8' },
};

/**
 * A PostgreSQL schema Waybill's tables may live in: a lowercase identifier, since it travels unquoted in the
 * connections' search_path startup option, where PostgreSQL would fold case and split on spaces.
 */
export const PG_SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/;
