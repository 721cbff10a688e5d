/**
 * Wakes on PostgreSQL: LISTEN/NOTIFY. A run that becomes runnable sends a notification from the transaction that
 * makes it so, delivered to every listener when that transaction commits (never if it rolls back), and each
 * store's one listener hands it to its subscribers (the worker's idle loop).
 *
 * The sender. A run whose status becomes `queued` notifies by itself: the trigger of
 * drizzle/pg/0013_runnable_notify.sql, whatever path queued it. Anything else that makes a run runnable in a
 * statement or a transaction (a worker marked dead frees its runs; a wait decided without requeueing) puts
 * notifyRunnable() in it: see there.
 *
 * The listener. LISTEN belongs to a session, so it runs on a client of its own, never the pool's (a pooled
 * connection is handed to others between statements, and behind a transaction pooler between transactions):
 * WAYBILL_PG_SESSION_URL, the main URL by default. The client is connected while someone subscribes. When its
 * connection dies (a restart, pg_terminate_backend, a network cut) subscribers are told `lost` and poll at their
 * short interval; it reconnects with backoff (100 ms doubling to 10 s, jittered) and says `listening` again,
 * which tells them to look at once, since what was sent meanwhile went to nobody. TCP keepalive finds a peer
 * that vanished without closing the socket.
 *
 * The channel: `waybill_wake_` and 16 hex digits of md5(schema), one per schema, so stores that share a database
 * never wake each other; a channel is an identifier (63 bytes at most), which a schema name of 63 would overrun.
 * The payload is the run's workflow, or '' for any; PostgreSQL folds identical notifications of one transaction.
 */
import { createHash } from 'node:crypto';
import { type SQL, sql } from 'drizzle-orm';
import pg from 'pg';
import type { Wake } from '../contract';
import { clientConfig } from './connection';

/** The channel a schema's wakes travel on; the trigger computes the same from TG_TABLE_SCHEMA. */
export function wakeChannel(schema: string): string {
  return `waybill_wake_${createHash('md5').update(schema, 'utf8').digest('hex').slice(0, 16)}`;
}

/**
 * The notification that a run may be runnable now, as an SQL expression for the statement or transaction that
 * makes it so: it is sent when that commits, and not at all if it rolls back. `workflow`: the run's workflow
 * (an expression such as `upd.workflow`, or a value), so that only workers serving it look; null or absent,
 * every worker looks. The channel is the schema the statement runs in (current_schema(), where its tables are).
 *
 * pg_notify returns void: put it in a SELECT list that is read, since a CTE nobody reads is never run. In a
 * transaction on one client (c.inTransaction), a statement of its own:
 *
 *   await c.once(sql`SELECT ${notifyRunnable(sql`r.workflow`)} FROM ${runs} r WHERE r.id = ${runId}`, undefined, client);
 *
 * or inside the statement that changes the run:
 *
 *   sql`WITH upd AS (UPDATE runs ... RETURNING workflow), woken AS (SELECT ${notifyRunnable(sql`upd.workflow`)} FROM upd)
 *     SELECT (SELECT count(*) FROM woken) AS woken, ...`
 *
 * A status set to `queued` needs none of this: the trigger sends it. A run that becomes runnable with nothing
 * written at that moment (a sleep coming due) cannot be announced by the database at all; whoever knows the time
 * (a timer in the process) must wake the worker itself. SQLite needs no call: its watcher sees every commit.
 */
export function notifyRunnable(workflow?: SQL | string | null): SQL {
  const payload = workflow == null ? sql`''` : typeof workflow === 'string' ? sql`${workflow}::text` : workflow;
  return sql`pg_notify('waybill_wake_' || left(md5(current_schema()), 16), coalesce(${payload}, ''))`;
}

export interface WakeListenerOptions {
  /** The session URL: the database itself, or a session-mode pool, never a transaction pooler. */
  url: string;
  /** The store's schema; undefined: the connection's current_schema(), as the store's own tables are found. */
  schema?: string;
  /** First and largest wait between reconnects. */
  backoff?: { initialMs: number; maxMs: number };
}

export interface WakeListener {
  subscribe(onWake: (wake: Wake) => void): () => void;
  /** Whether notifications are delivered now (connected and listening). */
  readonly listening: boolean;
  /** Closes the connection for good; subscribers hear nothing more. */
  close(): Promise<void>;
}

/** One store's listener: connects at the first subscriber, disconnects after the last. */
export function wakeListener(options: WakeListenerOptions): WakeListener {
  const { initialMs, maxMs } = options.backoff ?? { initialMs: 100, maxMs: 10_000 };
  const subscribers = new Set<(wake: Wake) => void>();
  let client: pg.Client | null = null;
  let listening = false;
  let closed = false;
  let delay = initialMs;
  let retry: NodeJS.Timeout | undefined;

  const emit = (wake: Wake) => {
    for (const fn of [...subscribers]) fn(wake);
  };

  const lose = (lost: pg.Client) => {
    if (client !== lost) return;
    client = null;
    lost.removeAllListeners('notification');
    // Not awaited: the session may be half gone already, and nothing waits for it to finish going.
    void lost.end().catch(() => undefined);
    if (listening) {
      listening = false;
      emit({ kind: 'lost' });
    }
    if (closed || subscribers.size === 0) return;
    const wait = delay * (0.5 + Math.random() / 2);
    delay = Math.min(delay * 2, maxMs);
    retry = setTimeout(() => void connect(), wait);
    retry.unref();
  };

  const connect = async () => {
    if (closed || client || subscribers.size === 0) return;
    // Its own name in pg_stat_activity (an application_name in the URL still wins), for operators looking for it.
    const config = { ...clientConfig(options.url, options.schema), fallback_application_name: 'waybill-listener' };
    const mine = new pg.Client({ ...config, keepAlive: true });
    client = mine;
    // Errors after connecting (the server ended the session) arrive here; during connect, connect() rejects.
    mine.on('error', () => lose(mine));
    mine.on('end', () => lose(mine));
    try {
      await mine.connect();
      const schema =
        options.schema ??
        (await mine.query<{ schema: string | null }>('SELECT current_schema() AS schema')).rows[0]?.schema;
      if (!schema) throw new Error('no schema on the search_path');
      const channel = wakeChannel(schema);
      mine.on('notification', (message) => {
        if (message.channel === channel) {
          emit(message.payload ? { kind: 'runnable', workflow: message.payload } : { kind: 'runnable' });
        }
      });
      await mine.query(`LISTEN ${channel}`);
      if (client !== mine) return;
      listening = true;
      delay = initialMs;
      emit({ kind: 'listening' });
    } catch {
      lose(mine);
    }
  };

  const stop = (): Promise<void> => {
    clearTimeout(retry);
    const current = client;
    client = null;
    listening = false;
    delay = initialMs;
    return current ? current.end().catch(() => undefined) : Promise.resolve();
  };

  return {
    subscribe(onWake) {
      const fn = (wake: Wake) => onWake(wake);
      subscribers.add(fn);
      if (listening) queueMicrotask(() => subscribers.has(fn) && fn({ kind: 'listening' }));
      else void connect();
      return () => {
        subscribers.delete(fn);
        if (subscribers.size === 0) void stop();
      };
    },
    get listening() {
      return listening;
    },
    async close() {
      closed = true;
      subscribers.clear();
      await stop();
    },
  };
}
