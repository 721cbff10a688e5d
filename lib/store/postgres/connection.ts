/**
 * The PostgreSQL connection every operation file takes: the pool and its Drizzle view, the clock's skew,
 * one retried statement, and a transaction on one pooled connection. Operation files are free functions of
 * this object; nothing inherits from anything.
 *
 * Statements are built with Drizzle's `sql` template, each value at its place and cast there (`${step}::int`),
 * and run on the pool directly, so the retry and transient mapping (retry.ts) wrap exactly one round trip.
 * A name makes a statement prepared once per connection by node-postgres: only for texts that never vary.
 */

import { createHash } from 'node:crypto';
import { is, Placeholder, type SQL, sql } from 'drizzle-orm';
import { drizzle, type NodePgDatabase } from 'drizzle-orm/node-postgres';
import { PgDialect } from 'drizzle-orm/pg-core';
import pg from 'pg';
import type { Clock } from '../../clock';
import { InvalidInputError } from '../../errors';
import * as schema from '../schema/pg';
import { PG_SCHEMA_NAME } from '../shared/dialects';
import { capPoolWhenRefused, withRetry } from './retry';
import { skewSeconds } from './skew';

export interface PostgresOpenOptions {
  /**
   * postgres://user@host:port/database. An application_name in it replaces the default 'waybill';
   * `options` in it (e.g. `-c synchronous_commit=off`) are kept alongside the schema's search_path.
   */
  url: string;
  /**
   * Set as search_path on every connection (a startup option) and created if missing: one store per schema.
   * Behind a transaction pooler, leave it out and give the role its search_path instead (docs/operations.md, "Behind
   * PgBouncer"): PgBouncer refuses that startup option, or drops it silently when told to ignore `options`,
   * which the migration then refuses (the schema connections see is not this one).
   */
  schema?: string;
  clock?: Clock;
  /** Connections kept open (WAYBILL_PG_POOL_SIZE, 10 by default); benchmarks raise it with concurrency. */
  poolSize?: number;
  /**
   * Where the connections that need a session of their own go: the wake listener (LISTEN) and each worker's
   * liveness lock (a session advisory lock). Both outlive any transaction, so neither works through a pooler in
   * transaction mode (WAYBILL_PG_SESSION_URL: the database itself, or a session-mode pool). Default: `url`.
   */
  sessionUrl?: string;
  /**
   * Named prepared statements (node-postgres prepares a named statement once per connection, then binds it by
   * name). A pooler in transaction mode hands each transaction another server connection, where that name may not
   * exist: PgBouncer 1.21 and later follow them (max_prepared_statements, on by default since 1.24); for older
   * poolers turn them off (WAYBILL_PG_NAMED_STATEMENTS=off), and every statement is parsed on each call. Default true.
   */
  namedStatements?: boolean;
}

const dialect = new PgDialect();

/**
 * A hot-path statement, built once: its values are named placeholders (`sql.placeholder('token')`) at their
 * places in the template, and each call fills them by name. Building a Drizzle template and rendering it
 * costs tens of microseconds a call, a visible share of a step (npm run bench); this costs a lookup per value.
 */
export interface Prepared<V> {
  readonly name: string;
  readonly text: string;
  /** The placeholder each $n of the text takes, in order. */
  readonly slots: readonly (keyof V & string)[];
}

export function prepare<V extends Record<string, unknown>>(name: string, statement: SQL): Prepared<V> {
  const q = dialect.sqlToQuery(statement);
  const names = q.params.map((p) => {
    if (!is(p, Placeholder)) throw new Error(`statement ${name}: every value must be a placeholder, got ${String(p)}`);
    return p.name as keyof V & string;
  });
  // Drizzle numbers every occurrence anew; a placeholder used twice becomes one parameter again, so the server
  // sees one value (and one bind) where the statement means one.
  const slots = [...new Set(names)];
  const text = q.sql.replace(/\$(\d+)\b/g, (_, n: string) => `$${slots.indexOf(names[Number(n) - 1]!) + 1}`);
  return { name, text, slots };
}

/** A statement's name made from its text: the same text has the same name on every connection and in every process. */
export function nameOfText(prefix: string, text: string): string {
  return `${prefix}_${createHash('sha1').update(text).digest('hex').slice(0, 24)}`;
}

/**
 * At most this many texts are named as fixed reads in one process, whatever its callers pass: a bound on the
 * statements each connection keeps prepared.
 */
const FIXED_TEXTS = 256;
const fixedNames = new Map<string, string>();

/**
 * The name a fixed read is prepared under: a text whose every value is a parameter and whose plan no value
 * changes (a read by run id or key). Named, it is parsed once a connection, and PostgreSQL keeps a generic plan
 * for it after five calls when that plan costs no more than those made for each call. Not for a text whose
 * values choose its plan (a filter that may be NULL, a status or tag whose rows differ a thousandfold): that
 * text is split by what is given instead. Not for a text that selects every column of a table (`*`, `t.*`)
 * either: once a migration adds a column, a kept plan of it fails ("cached plan must not change result type")
 * until the connection ends.
 */
export function fixedName(text: string): string | undefined {
  let name = fixedNames.get(text);
  if (name === undefined && fixedNames.size < FIXED_TEXTS && !selectsEveryColumn(text)) {
    name = nameOfText('waybill_r', text);
    fixedNames.set(text, name);
  }
  return name;
}

/**
 * Whether a text may select every column of a table: any `*` but `count(*)` and a `SELECT * FROM (` of a
 * subquery (whose own columns are then judged). Cautious: a multiplication counts too, and is left unnamed.
 */
function selectsEveryColumn(text: string): boolean {
  return text.replace(/\bcount\(\s*\*\s*\)|\bSELECT\s+\*\s+FROM\s+\(/gi, '').includes('*');
}

/**
 * The database's clock shifted by `skew` (a float8), as a scalar subquery: PostgreSQL computes it once a statement
 * (an InitPlan), where a bare expression is computed again for every row it is compared with, extract()'s numeric
 * arithmetic included.
 */
const dbNow = (skew: SQL): SQL => sql`(SELECT extract(epoch from now())::float8 + ${skew}::float8)`;

/** dbNow as plain SQL text, `skew` written in (a parameter such as `$1`, or a number). */
export const dbNowText = (skew: string): string => dialect.sqlToQuery(dbNow(sql.raw(skew))).sql;

/** In place of a statement's name: name it by its text, as a fixed read (fixedName). */
export const FIXED = Symbol('fixed read');
type Name = string | typeof FIXED | undefined;

/** A query built by Drizzle's builder, run under its fixed name (fixedName): it keeps its rows' mapping. */
interface Built<T> {
  toSQL(): { sql: string };
  prepare(name: string): { execute(): Promise<T> };
  execute(): Promise<T>;
}

export interface PgConnection {
  readonly pool: pg.Pool;
  /** The same pool through Drizzle's query builder, for the plain reads and writes. */
  readonly orm: NodePgDatabase<typeof schema>;
  readonly clock: Clock;
  /** Seconds the injected clock is ahead of this host's (skew.ts). */
  skew(): number;
  /** `now` by the database's clock, shifted by the skew: the one time every lease is judged by. */
  now(): SQL;
  /** Text and values of a statement, as node-postgres takes them. */
  text(statement: SQL): { text: string; values: unknown[] };
  /** One statement, retried while transient. */
  query<R extends pg.QueryResultRow>(statement: SQL, name?: string): Promise<pg.QueryResult<R>>;
  /** A fixed read (fixedName): one statement, named by its text, retried while transient as `what`. */
  read<R extends pg.QueryResultRow>(what: string, statement: SQL): Promise<pg.QueryResult<R>>;
  /** A fixed read built by Drizzle's query builder, retried while transient as `what`. */
  readBuilt<T>(what: string, query: Built<T>): Promise<T>;
  /** One statement, not retried: for the callers that decide themselves what a lost answer means. */
  once<R extends pg.QueryResultRow>(
    statement: SQL,
    name?: Name,
    on?: pg.Pool | pg.PoolClient,
  ): Promise<pg.QueryResult<R>>;
  /** A prepared statement with its values, not retried (the caller's withRetry decides what a loss means). */
  exec<R extends pg.QueryResultRow, V>(statement: Prepared<V>, values: V): Promise<pg.QueryResult<R>>;
  /** BEGIN … COMMIT on one pooled connection; a failure rolls back and the connection is not reused. */
  inTransaction<T>(fn: (client: pg.PoolClient) => Promise<T>): Promise<T>;
}

export function postgresConnection(pool: pg.Pool, clock: Clock): PgConnection {
  const text = (statement: SQL) => {
    const q = dialect.sqlToQuery(statement);
    return { text: q.sql, values: q.params };
  };
  const once = <R extends pg.QueryResultRow>(statement: SQL, name?: Name, on: pg.Pool | pg.PoolClient = pool) => {
    const t = text(statement);
    return on.query<R>({ name: name === FIXED ? fixedName(t.text) : name, ...t });
  };
  const skew = () => skewSeconds(clock);
  return {
    pool,
    orm: drizzle(pool, { schema }),
    clock,
    skew,
    now: () => dbNow(sql`${skew()}`),
    text,
    once,
    query: (statement, name) => withRetry(name ?? 'query', () => once(statement, name)),
    read: (what, statement) => withRetry(what, () => once(statement, FIXED)),
    readBuilt: (what, query) => {
      const name = fixedName(query.toSQL().sql);
      return withRetry(what, () => (name ? query.prepare(name).execute() : query.execute()));
    },
    exec: <R extends pg.QueryResultRow, V>(statement: Prepared<V>, values: V) =>
      pool.query<R>({
        name: statement.name,
        text: statement.text,
        values: statement.slots.map((slot) => values[slot]),
      }),
    async inTransaction(fn) {
      // Checked out, the client is covered by its own 'error' listener (see openPool): a connection lost
      // between two statements fails the next one, and the client is not reused.
      const client = await pool.connect();
      let failure: Error | undefined;
      try {
        await client.query('BEGIN');
        const result = await fn(client);
        await client.query('COMMIT');
        return result;
      } catch (error) {
        failure = error instanceof Error ? error : new Error(String(error));
        await client.query('ROLLBACK').catch(() => undefined);
        throw error;
      } finally {
        client.release(failure);
      }
    },
  };
}

/** The pool's size when none is given: what one worker of modest concurrency needs. */
export const DEFAULT_POOL_SIZE = 10;

/**
 * How any connection of the store connects: the URL, and the schema as search_path in its startup options.
 * The pool and the session connections (the wake listener, the liveness locks) all take this.
 */
export function clientConfig(rawUrl: string, schema: string | undefined): pg.ClientConfig {
  if (schema !== undefined && !PG_SCHEMA_NAME.test(schema)) {
    throw new InvalidInputError(`schema must be a lowercase SQL identifier, got ${JSON.stringify(schema)}`);
  }
  const { url, startup } = splitStartupOptions(rawUrl);
  return {
    connectionString: url,
    // Operators (and our tests) find Waybill's connections in pg_stat_activity by this name.
    fallback_application_name: 'waybill',
    options: [startup, schema ? `-c search_path=${schema}` : ''].filter(Boolean).join(' ') || undefined,
  };
}

/** The pool a store runs on, with the schema as search_path on every connection. */
export function openPool(options: PostgresOpenOptions, url = options.url, size = options.poolSize): pg.Pool {
  const pool = new pg.Pool({
    ...clientConfig(url, options.schema),
    max: size ?? DEFAULT_POOL_SIZE,
    // No JIT: every statement of ours is a few index lookups, and a plan that merely might read a big table (the
    // runs list's count of a run with no progress row, costed at a seq scan of committed when one run holds most
    // of it) was compiled at every call, 0.7 – 1 s a runs page. A SET, not a startup option, which a pooler
    // refuses; done before the connection is handed out. A server that has no such setting keeps its default.
    onConnect: (client: pg.ClientBase) =>
      client.query('SET jit = off').then(
        () => undefined,
        () => undefined,
      ),
    ...(options.namedStatements === false ? { Client: UnnamedClient } : {}),
  });
  // An idle connection the server closed (restart, pg_terminate_backend, idle timeout) emits 'error' on
  // the pool, which throws if nobody listens. The pool has already dropped it; the next query reconnects.
  pool.on('error', () => undefined);
  // And every client listens itself, from its first connection to its end: the pool's own listener is off while
  // a client is checked out, and a client handed from one checkout to a waiting `await pool.connect()` has
  // nobody listening until that await resumes. A FATAL (57P01, a failover, a pooler restarting) in the same TCP
  // chunk as the answer that released it was then an unhandled 'error' that killed the process. Heard here,
  // the error leaves the client unqueryable: its holder's next statement fails as a lost connection, is
  // retried on another, and the client is released with that error, which destroys it.
  pool.on('connect', (client) => client.on('error', () => undefined));
  capPoolWhenRefused(pool);
  return pool;
}

/**
 * Takes `options` (server settings such as `-c synchronous_commit=off`) out of the URL so that the schema's
 * search_path can be added to them: node-postgres would let the URL's value replace ours.
 */
function splitStartupOptions(raw: string): { url: string; startup: string } {
  let parsed: URL;
  try {
    parsed = new URL(raw);
  } catch {
    return { url: raw, startup: '' };
  }
  const startup = parsed.searchParams.get('options') ?? '';
  if (!startup) return { url: raw, startup };
  parsed.searchParams.delete('options');
  return { url: parsed.toString(), startup };
}

/**
 * A client that never names a statement: each is parsed where it runs, for a pooler that hands every transaction
 * another server connection and does not follow named statements there (PgBouncer before 1.21). node-postgres
 * would otherwise send a name's Parse once per client connection and then bind by name on whichever server
 * connection the pooler picked: "prepared statement does not exist".
 */
class UnnamedClient extends pg.Client {
  // biome-ignore lint/suspicious/noExplicitAny: query's overloads, passed through as they came.
  override query(...args: any[]): any {
    const [config] = args;
    // A plain config object only: a Submittable (pg.Query, a cursor) is passed on as it is.
    if (config && typeof config === 'object' && typeof config.submit !== 'function' && 'name' in config) {
      args[0] = { ...config, name: undefined };
    }
    // biome-ignore lint/suspicious/noExplicitAny: as above.
    return (super.query as (...a: any[]) => any)(...args);
  }
}
