/**
 * Where the two dialects' shared SQL differs, in one table (pg-boss keeps its BACKEND_PROFILES so): the
 * fragments in sql.ts read these flags instead of each backend keeping its own copy of a statement.
 * What differs in behaviour rather than in spelling (whose clock judges a lease, how a dead worker is told)
 * is each backend's own, in its folder's files, with the reason beside it.
 */
import type { Dialect } from '../contract/rows';
import { committedRun, committedRunIds } from '../sqlite/committed-rows';

export interface DialectFlags {
  /** A cast that makes a count come back as a JS number: pg hands bigint over as a string. */
  int: string;
  /** The same for sums and averages (numeric on pg). */
  float: string;
  /**
   * `run_id <test>` on the committed table (`= @runId`, `IN (…)`; `of`: its alias and a dot): on SQLite a run's
   * rows are in two partial indexes, and a read must name both (sqlite/committed-rows.ts).
   */
  committedRun(test: string, of?: string): string;
  /** Every run id with committed rows (duplicates allowed): an index's worth, not the table's. */
  committedRunIds: string;
}

/** committedRun(`= ?`) with positional `?`s (the rewind plans'), and the id once for each `?` the text holds. */
export function committedOfRunAt(dialect: Dialect, id: string, of = ''): { sql: string; params: string[] } {
  const sql = DIALECTS[dialect].committedRun('= ?', of);
  return { sql, params: Array.from({ length: sql.split('?').length - 1 }, () => id) };
}

export const DIALECTS: Record<Dialect, DialectFlags> = {
  sqlite: { int: '', float: '', committedRun, committedRunIds },
  postgres: {
    int: '::int',
    float: '::float8',
    committedRun: (test, of = '') => `${of}run_id ${test}`,
    committedRunIds: 'SELECT run_id FROM committed',
  },
};

/**
 * A PostgreSQL schema Waybill's tables may live in: a lowercase identifier, since it travels unquoted in the
 * connections' search_path startup option, where PostgreSQL would fold case and split on spaces.
 */
export const PG_SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/;
