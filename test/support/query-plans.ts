/**
 * What SQLite will do with the statements a store prepares: every text better-sqlite3 is asked to prepare, by
 * the operation that first asked (statements are prepared once per connection and kept), and each text's
 * EXPLAIN QUERY PLAN. For the contract tests that hold a table's reads to its indexes (committed-plans.test.ts).
 *
 * A plan is read from the text itself with every parameter bound to NULL: SQLite plans a statement when it is
 * prepared, before any value is bound, so this is the plan every call of it runs. A literal in the parameter's
 * place would not be: `NULL IS NULL` folds away, and `LIKE 'p'` may become a range of another index.
 */
import Database from 'better-sqlite3';

export interface PreparedTexts {
  /** Each text prepared, and the operation that first prepared it ('open' before any). */
  readonly texts: ReadonlyMap<string, string>;
  /** Runs `work`, naming by `label` the texts first prepared while it runs. */
  during<T>(label: string, work: () => Promise<T>): Promise<T>;
  restore(): void;
}

/** Records every text prepared on any connection from now until restore(). */
export function recordPrepared(): PreparedTexts {
  const texts = new Map<string, string>();
  let label = 'open';
  const proto = Database.prototype as unknown as { prepare: (this: Database.Database, sql: string) => unknown };
  const original = proto.prepare;
  proto.prepare = function (this: Database.Database, sql: string) {
    if (!texts.has(sql)) texts.set(sql, label);
    return original.call(this, sql);
  };
  return {
    texts,
    async during(next, work) {
      const before = label;
      label = next;
      try {
        return await work();
      } finally {
        label = before;
      }
    },
    restore: () => {
      proto.prepare = original;
    },
  };
}

/** The text with string literals emptied, quoted identifiers unquoted and comments removed. */
export function bareSql(sql: string): string {
  return sql
    .replace(/--[^\n]*|\/\*[\s\S]*?\*\//g, ' ')
    .replace(/'(?:[^']|'')*'/g, "''")
    .replace(/"((?:[^"]|"")*)"|`((?:[^`]|``)*)`|\[([^\]]*)\]/g, (_, a, b, c) => a ?? b ?? c);
}

/** The parameters of a text: how many positional (`?`, `?NNN`) and the names of the others (`@a`, `:a`, `$a`). */
export function parametersOf(sql: string): { positional: number; named: string[] } {
  let positional = 0;
  let anonymous = 0;
  const named = new Set<string>();
  for (const m of bareSql(sql).matchAll(/\?(\d*)|[@:$]([A-Za-z_]\w*)/g)) {
    if (m[2]) named.add(m[2]);
    else if (m[1]) positional = Math.max(positional, Number(m[1]));
    else anonymous += 1;
  }
  return { positional: Math.max(positional, anonymous), named: [...named] };
}

/** EXPLAIN QUERY PLAN of a text, every parameter NULL: one line per step, as the sqlite3 shell prints them. */
export function queryPlan(db: Database.Database, sql: string): string[] {
  const { positional, named } = parametersOf(sql);
  const args: unknown[] = Array.from({ length: positional }, () => null);
  if (named.length) args.push(Object.fromEntries(named.map((n) => [n, null])));
  return db
    .prepare<unknown[], { detail: string }>(`EXPLAIN QUERY PLAN ${sql}`)
    .all(...args)
    .map((row) => row.detail);
}
