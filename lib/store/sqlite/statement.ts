/**
 * A SQLite statement that keeps its SQL and its binding together: the text names each value (`@idemKey`), the
 * type says what a call passes, and a call passes one object of those names. Nothing is counted by position
 * against a column list elsewhere.
 *
 * better-sqlite3 can bind `@name` from an object itself, but it looks each name up through V8's C++ API:
 * 2-3 times the cost of positional binding for an 11-value insert, a visible share of a step at NORMAL
 * (bench/RESULTS.md, "Why the code is shaped so"). So the text is rewritten once, at definition, to positional
 * `?`, and the call is a function made for that statement that reads the object's properties in order (plain
 * property loads the JIT caches) and binds them positionally: the hot path's cost stays that of a positional
 * call.
 */
import type Database from 'better-sqlite3';

/** A statement's definition: made once per module, prepared once per connection (`on`). */
export interface StatementDef<P extends object, R> {
  /** The text as written, with its `@name`s. */
  readonly sql: string;
  /** The text better-sqlite3 prepares: each `@name` a `?`. */
  readonly positional: string;
  /** The names, in the order of the `?`s (a name used twice is bound twice). */
  readonly names: readonly string[];
  /** This statement on a connection, prepared on first use and kept. */
  on(db: Database.Database): Statement<P, R>;
}

export interface Statement<P extends object, R> {
  run(params: P): Database.RunResult;
  get(params: P): R | undefined;
  all(params: P): R[];
  /** The prepared statement, for what the three calls above do not cover (its columns, say). */
  readonly prepared: Database.Statement<unknown[], R>;
}

/** A statement from its text; P is the object each call passes, R a row it reads. */
export function statement<P extends object, R = unknown>(sql: string): StatementDef<P, R> {
  const { positional, names } = toPositional(sql);
  const made = new WeakMap<Database.Database, Statement<P, R>>();
  return {
    sql,
    positional,
    names,
    on(db) {
      let bound = made.get(db);
      if (!bound) made.set(db, (bound = bind<P, R>(db.prepare(positional), names)));
      return bound;
    },
  };
}

/** Each definition's statement on a connection, by the same names. */
export type Prepared<D> = { [K in keyof D]: D[K] extends StatementDef<infer P, infer R> ? Statement<P, R> : never };

export function prepareAll<D extends Record<string, StatementDef<never, unknown>>>(
  db: Database.Database,
  defs: D,
): Prepared<D> {
  return Object.fromEntries(Object.entries(defs).map(([name, def]) => [name, def.on(db)])) as Prepared<D>;
}

const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * One function per statement and call kind, `(p) => s.run(p.idemKey, p.runId, …)`: the names come from the
 * statement's own constant text (checked to be identifiers), never from a caller's data.
 */
function bind<P extends object, R>(
  prepared: Database.Statement<unknown[], R>,
  names: readonly string[],
): Statement<P, R> {
  for (const name of names) if (!IDENTIFIER.test(name)) throw new Error(`not a parameter name: ${name}`);
  const args = names.map((name) => `p.${name}`).join(', ');
  const make = new Function('s', `return [(p) => s.run(${args}), (p) => s.get(${args}), (p) => s.all(${args})];`);
  const [run, get, all] = make(prepared) as [Statement<P, R>['run'], Statement<P, R>['get'], Statement<P, R>['all']];
  return { run, get, all, prepared };
}

/**
 * `@name` → `?`, outside string literals, quoted identifiers and comments (a `'{}'` or a `-- note@here` is left
 * alone).
 */
export function toPositional(sql: string): { positional: string; names: string[] } {
  const names: string[] = [];
  let out = '';
  let i = 0;
  while (i < sql.length) {
    const ch = sql[i]!;
    if (ch === "'" || ch === '"' || ch === '`') {
      const end = closing(sql, i, ch);
      out += sql.slice(i, end);
      i = end;
    } else if (ch === '-' && sql[i + 1] === '-') {
      const end = sql.indexOf('\n', i);
      const stop = end === -1 ? sql.length : end;
      out += sql.slice(i, stop);
      i = stop;
    } else if (ch === '/' && sql[i + 1] === '*') {
      const end = sql.indexOf('*/', i + 2);
      const stop = end === -1 ? sql.length : end + 2;
      out += sql.slice(i, stop);
      i = stop;
    } else if (ch === '@') {
      const name = /^[A-Za-z_][A-Za-z0-9_]*/.exec(sql.slice(i + 1))?.[0];
      if (!name) throw new Error(`a lone @ at ${i} in: ${sql}`);
      names.push(name);
      out += '?';
      i += 1 + name.length;
    } else if (ch === '?' || ch === '$') {
      // One kind of parameter per statement: a `?` among `@name`s would be bound by position after all.
      throw new Error(`only @name parameters are taken, found ${ch} at ${i} in: ${sql}`);
    } else {
      out += ch;
      i += 1;
    }
  }
  return { positional: out, names };
}

/** The index just past the quote that closes the one at `start` (a doubled quote is part of the text). */
function closing(sql: string, start: number, quote: string): number {
  let i = start + 1;
  while (i < sql.length) {
    if (sql[i] === quote) {
      if (sql[i + 1] === quote) i += 2;
      else return i + 1;
    } else i += 1;
  }
  return i;
}
