/**
 * Column lists both dialects share, written once. Each list is in the tables' property names (the Drizzle
 * schema's), so a SELECT through them returns rows of the types in types-rows.ts. PostgreSQL folds unquoted
 * aliases to lower case, so its aliases are quoted; SQLite keeps them as written.
 */
import type { Dialect } from './types';

/** The committed row, in the order every insert of one binds its values. */
export const COMMITTED_FIELDS = [
  'idem_key',
  'run_id',
  'result_json',
  'committed_at',
  'step',
  'fingerprint',
  'worker_id',
  'duration_ms',
  'source',
  'input_json',
  'prior_step',
  'prior_state_json',
] as const;

/**
 * The longest progress state a commit copies beside its result as the step's prior state (committed.prior_*):
 * a loop whose state grows with its steps would otherwise store it once per step. Counted in characters (code
 * points), as SQLite's and PostgreSQL's length() count them. Longer, none is recorded,
 * and a rerun from that step keeps the run's state as it is (and says so).
 */
export const PRIOR_STATE_MAX_CHARS = 16_384;

const camel = (column: string) => column.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase());

/** `column AS alias, …` for a SELECT, optionally of a table alias (`c.`). */
export function selectList(dialect: Dialect, columns: readonly string[], table = ''): string {
  return columns
    .map((column) => {
      const alias = camel(column);
      if (alias === column) return `${table}${column}`;
      return `${table}${column} AS ${dialect === 'postgres' ? `"${alias}"` : alias}`;
    })
    .join(', ');
}

/** What a read of a committed row selects: the insert's columns and the fork link, which only a fork writes. */
export const COMMITTED_READ = [...COMMITTED_FIELDS, 'forked_from'] as const;

export const committedColumns = (dialect: Dialect, table = '') => selectList(dialect, COMMITTED_READ, table);

/**
 * A LIKE pattern that finds `query` anywhere, its own `%`, `_` and `\` matched literally (both dialects'
 * statements say ESCAPE '\').
 */
export function containsPattern(query: string): string {
  return `%${query.replace(/[\\%_]/g, (ch) => `\\${ch}`)}%`;
}
