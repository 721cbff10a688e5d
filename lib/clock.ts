/**
 * Where Waybill gets the time: the wall clock (epoch ms, like Date.now(); the store writes epoch seconds), a
 * monotonic source for durations and deadlines (like performance.now()), and timers. The checkpoint core,
 * the lease keeper, the worker and the store all take one, so a test moves a ManualClock instead of sleeping
 * to pass a lease, a renewal or a backoff. The default everywhere is systemClock: no behaviour changes.
 *
 * Our own rather than @sinonjs/fake-timers: that one patches the globals, which would also stop the timers
 * of everything else in the process (the pg driver's, vitest's own); this one moves only what was given it.
 */
import { setTimeout as sleep } from 'node:timers/promises';

export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
  /** Milliseconds from an arbitrary origin that never goes back: for durations and deadlines. */
  monotonic(): number;
  /**
   * Calls fn once, ms from now on this clock. The handle is for clearTimeout only. keepAlive false: this
   * timer alone does not keep the process running (Node's unref), as for a renewal or an hourly prune.
   */
  setTimeout(fn: () => void, ms: number, options?: TimerOptions): TimerHandle;
  clearTimeout(handle: TimerHandle | undefined): void;
  /** Resolves after ms on this clock; rejects with an AbortError (cause: the reason) when signal aborts. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

/**
 * Calls fn every ms on the clock until the returned stop is called, as setInterval does: the next call is
 * set when this one starts, so a slow fn does not stretch the cadence (and may overlap; fn guards itself).
 */
export function every(clock: Clock, ms: number, fn: () => void, options?: TimerOptions): () => void {
  let handle: TimerHandle | undefined;
  let stopped = false;
  const fire = () => {
    if (stopped) return;
    handle = clock.setTimeout(fire, ms, options);
    fn();
  };
  handle = clock.setTimeout(fire, ms, options);
  return () => {
    stopped = true;
    clock.clearTimeout(handle);
  };
}

export interface TimerOptions {
  /** Default true, as Node's own timers. */
  keepAlive?: boolean;
}

/** Opaque: what setTimeout gave back. */
export type TimerHandle = { readonly __timer: true };

/** The real clock: Date.now(), performance.now() and Node's timers. */
export const systemClock: Clock = {
  now: () => Date.now(),
  monotonic: () => performance.now(),
  setTimeout(fn, ms, options) {
    const timer = setTimeout(fn, ms);
    if (options?.keepAlive === false) timer.unref();
    return timer as unknown as TimerHandle;
  },
  clearTimeout(handle) {
    if (handle) clearTimeout(handle as unknown as NodeJS.Timeout);
  },
  // Node's own, as the code used before it took a clock: the same AbortError, and kept alive while awaited.
  sleep: (ms, signal) => sleep(ms, undefined, signal ? { signal } : undefined),
};

/** The error an aborted sleep rejects with, shaped as node:timers/promises shapes it. */
export function abortError(signal: AbortSignal): Error {
  const error = new Error('The operation was aborted', { cause: signal.reason });
  error.name = 'AbortError';
  (error as Error & { code: string }).code = 'ABORT_ERR';
  return error;
}

interface Pending {
  due: number;
  seq: number;
  fn: () => void;
}

/**
 * A clock that moves only when told to. Timers fire in due order (ties in the order they were set), each
 * seeing now() at its own due time, as @sinonjs/fake-timers' tick does; a timer set by a firing one fires in
 * the same move if it falls due within it.
 */
export class ManualClock implements Clock {
  private readonly origin: number;
  private readonly timers = new Map<TimerHandle, Pending>();
  private seq = 0;

  constructor(private ms = Date.now()) {
    this.origin = ms;
  }

  now(): number {
    return this.ms;
  }

  monotonic(): number {
    return this.ms - this.origin;
  }

  /** keepAlive means nothing here: no real timer is set. */
  setTimeout(fn: () => void, ms: number, _options?: TimerOptions): TimerHandle {
    const handle = { __timer: true } as TimerHandle;
    this.timers.set(handle, { due: this.ms + Math.max(0, ms), seq: this.seq++, fn });
    return handle;
  }

  clearTimeout(handle: TimerHandle | undefined): void {
    if (handle) this.timers.delete(handle);
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return sleepOn(this, ms, signal);
  }

  /** How many timers are set and not yet fired. */
  get pending(): number {
    return this.timers.size;
  }

  /**
   * Moves the clock ms forward at once, firing the timers due meanwhile. Synchronous: what a fired timer
   * starts asynchronously (a store call, a promise's continuation) runs after; use tick() to let it run.
   */
  advance(ms: number): void {
    const target = this.ms + ms;
    for (let next = this.next(target); next; next = this.next(target)) this.fire(next);
    this.ms = target;
  }

  /**
   * Moves the clock ms forward timer by timer, letting the event loop turn before and after each one, so a
   * timer's continuation (a lease renewal's store call, a backoff's retry) runs at its due time and may set
   * timers that fall due within this move too. For stores that answer without real I/O waits (SQLite).
   */
  async tick(ms: number): Promise<void> {
    const target = this.ms + ms;
    await turn();
    for (let next = this.next(target); next; next = this.next(target)) {
      this.fire(next);
      await turn();
    }
    this.ms = target;
    await turn();
  }

  /**
   * Awaits `work`, jumping to the next timer whenever the event loop has nothing else to do first — time
   * that passes only while the code under test waits, as Temporal's time-skipping test server does. Gives
   * up, naming it, after limitMs of clock time, or when no timer is due and the work has not settled for
   * idleMs of real time (it waits on nothing, or on I/O far slower than any store's).
   */
  async runUntil<T>(work: Promise<T>, options: { limitMs?: number; idleMs?: number } = {}): Promise<T> {
    const { limitMs = 3_600_000, idleMs = 10_000 } = options;
    let settled = false;
    const done = work.finally(() => {
      settled = true;
    });
    done.catch(() => undefined);
    const start = this.ms;
    let idleSince: number | null = null;
    while (!settled) {
      await turn();
      if (settled) break;
      const next = this.next(start + limitMs);
      if (next) {
        idleSince = null;
        this.fire(next);
        continue;
      }
      // No timer within reach: the work waits on real I/O (a database's answer), or on nothing at all.
      idleSince ??= performance.now();
      if (performance.now() - idleSince > idleMs) {
        throw new Error(
          `ManualClock.runUntil: the work is still pending after ${this.ms - start} ms of clock time, with no timer due within ${limitMs} ms`,
        );
      }
      await new Promise((resolve) => setTimeout(resolve, 1));
    }
    return done;
  }

  private next(target: number): [TimerHandle, Pending] | undefined {
    let best: [TimerHandle, Pending] | undefined;
    for (const entry of this.timers) {
      const p = entry[1];
      if (p.due > target) continue;
      if (!best || p.due < best[1].due || (p.due === best[1].due && p.seq < best[1].seq)) best = entry;
    }
    return best;
  }

  private fire([handle, p]: [TimerHandle, Pending]): void {
    this.timers.delete(handle);
    this.ms = Math.max(this.ms, p.due);
    p.fn();
  }
}

/** One turn of the real event loop: pending promise continuations and I/O callbacks run first. */
function turn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

export const toSeconds = (ms: number): number => ms / 1000;

/** A sleep made of a clock's own timers, for clocks whose timers are not Node's (a test's): abortable. */
export function sleepOn(
  clock: Pick<Clock, 'setTimeout' | 'clearTimeout'>,
  ms: number,
  signal?: AbortSignal,
): Promise<void> {
  if (signal?.aborted) return Promise.reject(abortError(signal));
  return new Promise((resolve, reject) => {
    const onAbort = () => {
      clock.clearTimeout(handle);
      reject(abortError(signal!));
    };
    const handle = clock.setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
