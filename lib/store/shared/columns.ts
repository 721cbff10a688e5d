/**
 * SELECT lists both dialects build the same way, from the Drizzle schema's columns: each under the table's
 * property name, so a SELECT through one returns rows of the types in contract/rows.ts (the schema's
 * `$inferSelect`). Each backend passes its own schema's table.
 */
import { type Column, getTableColumns, getTableName, type Table } from 'drizzle-orm';
import type { Dialect } from '../contract';

/**
 * The longest progress state a commit copies beside its result as the step's prior state (committed.prior_*):
 * a loop whose state grows with its steps would otherwise store it once per step. Counted in characters (code
 * points), as SQLite's and PostgreSQL's length() count them. Longer, none is recorded,
 * and a rerun from that step keeps the run's state as it is (and says so).
 */
export const PRIOR_STATE_MAX_CHARS = 16_384;

/** A table's property names: the row type's keys. */
export type ColumnKey<T extends Table> = keyof T['$inferSelect'] & string;

declare const rowType: unique symbol;

/**
 * A SELECT list that carries the row it reads: `RowOf<typeof LIST>` types the statement, and the row-type
 * test (test/contract/select-lists.test.ts) holds each list's row to the store's row types.
 */
export type SelectList<Row> = string & { readonly [rowType]: Row };
export type RowOf<L> = L extends SelectList<infer Row> ? Row : never;

export interface SelectListOptions<K extends string> {
  /** A table alias, `r` for `r.id, r.workflow, …`. */
  of?: string;
  /** These columns only, in this order (a view's subset of a row); every column of the table otherwise. */
  only?: readonly K[];
  /** An expression instead of the bare column, given the column as the list writes it (`c => `${c}::float8``). */
  as?: Partial<Record<NoInfer<K>, (column: string) => string>>;
}

/**
 * `column AS alias, …` for a SELECT: each column of the Drizzle table under its property name, so the rows are
 * the schema's `$inferSelect` (or the `only` subset of it). Built from the schema, never written by hand: a
 * column added to the table is read by every list of it. PostgreSQL folds unquoted aliases to lower case, so
 * its aliases are quoted; SQLite keeps them as written.
 */
export function selectList<T extends Table, K extends ColumnKey<T> = ColumnKey<T>>(
  dialect: Dialect,
  table: T,
  options: SelectListOptions<K> = {},
): SelectList<Pick<T['$inferSelect'], K>> {
  const prefix = options.of ? `${options.of}.` : '';
  return columnsOf(table, options.only)
    .map(([key, name]) => {
      const column = `${prefix}${name}`;
      const as = options.as?.[key as K];
      return name === key && !as ? column : `${as ? as(column) : column} AS ${alias(dialect, key)}`;
    })
    .join(', ') as SelectList<Pick<T['$inferSelect'], K>>;
}

/**
 * The aliases alone, `id, workflow, "inputJson", …`: the same row again from a CTE or subquery whose SELECT
 * (or RETURNING) was `selectList` of this table.
 */
export function selectAliases<T extends Table, K extends ColumnKey<T> = ColumnKey<T>>(
  dialect: Dialect,
  table: T,
  only?: readonly K[],
): SelectList<Pick<T['$inferSelect'], K>> {
  return columnsOf(table, only)
    .map(([key]) => alias(dialect, key))
    .join(', ') as SelectList<Pick<T['$inferSelect'], K>>;
}

/** The column names alone, `idem_key, run_id, …`, for an INSERT's column list (or a copy's SELECT). */
export function columnNames<T extends Table>(table: T, only?: readonly ColumnKey<T>[]): string {
  return columnsOf(table, only)
    .map(([, name]) => name)
    .join(', ');
}

function columnsOf<T extends Table>(table: T, only?: readonly string[]): [key: string, name: string][] {
  const columns = getTableColumns(table) as Record<string, Column>;
  const keys = only ?? Object.keys(columns);
  return keys.map((key) => {
    const column = columns[key];
    if (!column) throw new Error(`${getTableName(table)} has no column ${key}`);
    return [key, column.name];
  });
}

const alias = (dialect: Dialect, key: string) => (dialect === 'postgres' && /[A-Z]/.test(key) ? `"${key}"` : key);

/**
 * A LIKE pattern that finds `query` anywhere, its own `%`, `_` and `\` matched literally (both dialects'
 * statements say ESCAPE '\').
 */
export function containsPattern(query: string): string {
  return `%${query.replace(/[\\%_]/g, (ch) => `\\${ch}`)}%`;
}
