/**
 * Wakes on SQLite, which has no notifications: a connection of the watcher's own reads `PRAGMA data_version`
 * every WATCH_MS, a number that changes when any other connection commits (this process's store included, since
 * the watcher's connection is not the store's) and costs about a microsecond to read, no lock, no disk. When it
 * changed, one read (ANY_RUNNABLE, through the pick's partial index, taking no lock in WAL mode) asks whether
 * any run is runnable now, and only then are subscribers woken: the commits that make nothing runnable (steps,
 * heartbeats, renewals), which are nearly all of them, wake nobody, and an idle worker never takes the write
 * lock to find nothing.
 *
 * A file only: an in-memory database has no other connection to watch from, and its workers poll as before.
 * The timer runs on the store's clock, and is set while someone subscribes.
 */
import Database from 'better-sqlite3';
import type { Clock, TimerHandle } from '../../clock';
import type { Wake } from '../contract';
import { ANY_RUNNABLE } from './runs';

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
  let open: { db: Database.Database; version: Database.Statement; any: Database.Statement } | null = null;
  let timer: TimerHandle | undefined;
  let version: unknown;
  let watching = false;
  /** Which chain of looks is the current one: a stop and a start between two looks never leave two. */
  let chain = 0;

  const emit = (wake: Wake) => {
    for (const fn of [...subscribers]) fn(wake);
  };

  const look = (mine: number) => {
    if (mine !== chain || subscribers.size === 0) return;
    try {
      if (!open) {
        const db = new Database(options.path, { fileMustExist: true });
        open = { db, version: db.prepare('PRAGMA data_version').pluck(), any: db.prepare(ANY_RUNNABLE).pluck() };
      }
      const now = open.version.get();
      if (!watching) {
        watching = true;
        version = now;
        emit({ kind: 'listening' });
      } else if (now !== version) {
        version = now;
        if (open.any.get({ now: clock.now() / 1000 }) === 1) emit({ kind: 'runnable' });
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
