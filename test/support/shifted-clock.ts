/**
 * Real time plus a shift the test moves: the clock the PostgreSQL contract backend runs on. PostgreSQL judges
 * every lease by the database's own `now()`, plus the injected clock's distance from this host's (see
 * lib/store/postgres-base.ts), so a store given this clock still reads the database clock — ticking by itself
 * as it does in production — only shifted by what the test let pass. `advance(ms)` is then a jump instead of
 * a real wait, and the database stays the one judge of whose lease has passed.
 *
 * Timers are real timers that also fire when a jump passes their due time, so a Checkpoint's renewals and
 * waits on this clock keep up with the store's time either way.
 */
import { type Clock, sleepOn, type TimerHandle, type TimerOptions } from '../../lib/clock';

interface Pending {
  due: number;
  seq: number;
  fn: () => void;
  timer: NodeJS.Timeout;
}

export class ShiftedClock implements Clock {
  private shift = 0;
  private seq = 0;
  private readonly timers = new Map<TimerHandle, Pending>();

  /** How far ahead of real time this clock is, in ms. */
  get shiftMs(): number {
    return this.shift;
  }

  now(): number {
    return Date.now() + this.shift;
  }

  monotonic(): number {
    return performance.now() + this.shift;
  }

  setTimeout(fn: () => void, ms: number, options?: TimerOptions): TimerHandle {
    const handle = { __timer: true } as TimerHandle;
    const timer = setTimeout(() => this.fire(handle), Math.max(0, ms));
    if (options?.keepAlive === false) timer.unref();
    this.timers.set(handle, { due: this.monotonic() + Math.max(0, ms), seq: this.seq++, fn, timer });
    return handle;
  }

  clearTimeout(handle: TimerHandle | undefined): void {
    const pending = handle && this.timers.get(handle);
    if (!pending) return;
    clearTimeout(pending.timer);
    this.timers.delete(handle);
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return sleepOn(this, ms, signal);
  }

  /**
   * Jumps ms ahead, firing the timers the jump passes in due order, and lets the event loop turn after each
   * so that what a timer started can set the next one. A timer's store call takes real time on PostgreSQL:
   * it lands shortly after, as a renewal would in production when the clock had moved that far.
   */
  async advance(ms: number): Promise<void> {
    this.shift += ms;
    const target = this.monotonic();
    for (let next = this.next(target); next; next = this.next(target)) {
      this.fire(next);
      await new Promise((resolve) => setImmediate(resolve));
    }
  }

  private next(target: number): TimerHandle | undefined {
    let best: [TimerHandle, Pending] | undefined;
    for (const entry of this.timers) {
      if (entry[1].due > target) continue;
      if (!best || entry[1].due < best[1].due || (entry[1].due === best[1].due && entry[1].seq < best[1].seq))
        best = entry;
    }
    return best?.[0];
  }

  private fire(handle: TimerHandle): void {
    const pending = this.timers.get(handle);
    if (!pending) return;
    this.timers.delete(handle);
    clearTimeout(pending.timer);
    pending.fn();
  }
}
