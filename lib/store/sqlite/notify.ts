/**
 * Wakes on SQLite, which has no notifications: a connection of the watcher's own reads `PRAGMA data_version`
 * every WATCH_MS, a number that changes when any other connection commits (this process's store included, since
 * the watcher's connection is not the store's) and costs about a microsecond to read, no lock, no disk. When it
 * changed, one read (anyRunnable, through the pick's partial index, taking no lock in WAL mode) asks whether
 * any run is runnable now, its workflow's published limits included, and only then are subscribers woken: the
 * commits that make nothing runnable (steps, heartbeats, renewals, and every one while the queue is all held
 * back by its limits), which are nearly all of them, wake nobody, and an idle worker never takes the write lock
 * to find nothing. A run held only by a worker's own declaration, which the store has no publication of, wakes
 * as a runnable one: the look knows only what is published.
 *
 * A file only: an in-memory database has no other connection to watch from, and its workers poll as before.
 * The timer runs on the store's clock, and is set while someone subscribes.
 */
import type Database from 'better-sqlite3';
import type { Clock, TimerHandle } from '../../clock';
import type { Wake } from '../contract';
import { pickLimits } from '../shared/run-limits-sql';
import { openSqliteFile } from './driver';
import { anyRunnable, PUBLISHED_LIMITS } from './runs';

/** How often data_version is read: the wake's latency, at a microsecond a look. */
export const WATCH_MS = 50;

export interface WakeWatcher {
  subscribe(onWake: (wake: Wake) => void): () => void;
  close(): void;
}

export function wakeWatcher(options: { path: string; clock: Clock; everyMs?: number }): WakeWatcher {
  const { clock } = options;
  const everyMs = options.everyMs ?? WATCH_MS;
  const subscribers = new Set<(wake: Wake) => void>();
  let open: {
    db: Database.Database;
    version: Database.Statement;
    published: Database.Statement<unknown[], { name: string; limitsJson: string | null }>;
    /** The look's statement per text: a text changes only when a publication's limits do. */
    looks: Map<string, Database.Statement>;
  } | null = null;
  let timer: TimerHandle | undefined;
  let version: unknown;
  let watching = false;
  /** Which chain of looks is the current one: a stop and a start between two looks never leave two. */
  let chain = 0;

  const emit = (wake: Wake) => {
    for (const fn of [...subscribers]) fn(wake);
  };

  const anyNow = (o: NonNullable<typeof open>): unknown => {
    const published = o.published.all({ workflows: null });
    const text = anyRunnable(
      pickLimits(
        published.map((row) => row.name),
        published,
        undefined,
      ),
    );
    let statement = o.looks.get(text);
    if (!statement) {
      if (o.looks.size >= 16) o.looks.clear();
      statement = o.db.prepare(text).pluck();
      o.looks.set(text, statement);
    }
    return statement.get({ now: clock.now() / 1000 });
  };

  const look = (mine: number) => {
    if (mine !== chain || subscribers.size === 0) return;
    try {
      if (!open) {
        const db = openSqliteFile(options.path, { fileMustExist: true });
        open = {
          db,
          version: db.prepare('PRAGMA data_version').pluck(),
          published: db.prepare(PUBLISHED_LIMITS),
          looks: new Map(),
        };
      }
      const now = open.version.get();
      if (!watching) {
        watching = true;
        version = now;
        emit({ kind: 'listening' });
      } else if (now !== version) {
        version = now;
        if (anyNow(open) === 1) emit({ kind: 'runnable' });
      }
    } catch {
      // A file gone or unreadable for a moment: say so, and look again at the next tick.
      open?.db.close();
      open = null;
      if (watching) {
        watching = false;
        emit({ kind: 'lost' });
      }
    }
    if (mine === chain && subscribers.size > 0)
      timer = clock.setTimeout(() => look(mine), everyMs, { keepAlive: false });
  };

  const stop = () => {
    chain++;
    clock.clearTimeout(timer);
    timer = undefined;
    watching = false;
    open?.db.close();
    open = null;
  };

  return {
    subscribe(onWake) {
      const fn = (wake: Wake) => onWake(wake);
      const first = subscribers.size === 0;
      subscribers.add(fn);
      if (options.path === ':memory:') return () => void subscribers.delete(fn);
      if (first) {
        const mine = ++chain;
        queueMicrotask(() => look(mine));
      } else if (watching) {
        queueMicrotask(() => subscribers.has(fn) && fn({ kind: 'listening' }));
      }
      return () => {
        if (subscribers.delete(fn) && subscribers.size === 0) stop();
      };
    },
    close() {
      subscribers.clear();
      stop();
    },
  };
}
