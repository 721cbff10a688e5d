/**
 * The ManualClock the contract tests move instead of sleeping: its timers must fire exactly as real ones
 * would, in due order, at their due time, and never early — or a test that passes a lease by moving it
 * would pass for the wrong reason.
 */
import { describe, expect, it } from 'vitest';
import { every, ManualClock, systemClock } from '../../lib/clock';

describe('ManualClock', () => {
  it('fires due timers in due order, ties in the order set, each seeing its own due time; none early', () => {
    const clock = new ManualClock(1_000);
    const fired: Array<[string, number]> = [];
    clock.setTimeout(() => fired.push(['c', clock.now()]), 30);
    clock.setTimeout(() => fired.push(['a', clock.now()]), 10);
    clock.setTimeout(() => fired.push(['b', clock.now()]), 10);
    const cleared = clock.setTimeout(() => fired.push(['never', clock.now()]), 20);
    clock.clearTimeout(cleared);
    clock.advance(9);
    expect(fired).toEqual([]);
    expect(clock.now()).toBe(1_009);
    clock.advance(21);
    expect(fired).toEqual([
      ['a', 1_010],
      ['b', 1_010],
      ['c', 1_030],
    ]);
    expect(clock.monotonic()).toBe(30);
    expect(clock.pending).toBe(0);
  });

  it('a timer set by a firing one fires in the same move when it falls due within it', () => {
    const clock = new ManualClock(0);
    const fired: number[] = [];
    const again = () => {
      fired.push(clock.now());
      clock.setTimeout(again, 100);
    };
    clock.setTimeout(again, 100);
    clock.advance(350);
    expect(fired).toEqual([100, 200, 300]);
    expect(clock.pending).toBe(1);
  });

  it('tick lets a timer’s continuation run and set the next timer within the same move', async () => {
    const clock = new ManualClock(0);
    const renewals: number[] = [];
    // As the lease keeper does: the next timer is set only once the (async) renewal has answered.
    const renew = () => {
      void Promise.resolve().then(() => {
        renewals.push(clock.now());
        clock.setTimeout(renew, 100);
      });
    };
    clock.setTimeout(renew, 100);
    await clock.tick(450);
    expect(renewals).toEqual([100, 200, 300, 400]);
    expect(clock.now()).toBe(450);
  });

  it('sleep resolves at its time and rejects as node:timers/promises does when aborted', async () => {
    const clock = new ManualClock(0);
    let woke = false;
    const sleeping = clock.sleep(50).then(() => (woke = true));
    await clock.tick(49);
    expect(woke).toBe(false);
    await clock.tick(1);
    await sleeping;
    expect(woke).toBe(true);

    const controller = new AbortController();
    const aborted = clock.sleep(1_000, controller.signal);
    controller.abort(new Error('drained'));
    await expect(aborted).rejects.toMatchObject({ name: 'AbortError', code: 'ABORT_ERR', cause: new Error('drained') });
    expect(clock.pending).toBe(0);
    await expect(clock.sleep(1, controller.signal)).rejects.toMatchObject({ name: 'AbortError' });
    await expect(systemClock.sleep(1, controller.signal)).rejects.toMatchObject({
      name: 'AbortError',
      code: 'ABORT_ERR',
    });
  });

  it('runUntil jumps from timer to timer while the work waits, and names work that waits on nothing', async () => {
    const clock = new ManualClock(0);
    const work = (async () => {
      for (let i = 0; i < 5; i++) await clock.sleep(1_000);
      return clock.now();
    })();
    expect(await clock.runUntil(work)).toBe(5_000);
    await expect(clock.runUntil(new Promise(() => undefined), { idleMs: 50 })).rejects.toThrow(/still pending/);
  });

  it('every keeps its cadence until stopped', () => {
    const clock = new ManualClock(0);
    const beats: number[] = [];
    const stop = every(clock, 250, () => beats.push(clock.now()));
    clock.advance(1_000);
    stop();
    clock.advance(1_000);
    expect(beats).toEqual([250, 500, 750, 1_000]);
    expect(clock.pending).toBe(0);
  });
});
