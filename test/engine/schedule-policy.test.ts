/** The firing plan's policies, by themselves: overlap and catch-up over ticks read by croner. */
import { describe, expect, it } from 'vitest';
import { cronProblem, nextTick, ticksBetween, timeZoneProblem } from '../../lib/engine/schedules/cron';
import { plan } from '../../lib/engine/schedules/policy';

const T = Date.UTC(2026, 0, 1, 12, 0, 0) / 1000;
const hourly = { cron: '0 0 * * * *', timeZone: 'UTC', overlap: 'skip' as const, catchUpCap: 10 };

describe('cron', () => {
  it('reads seconds and time zones, and names what is wrong', () => {
    expect(nextTick('* * * * * *', 'UTC', T)).toBe(T + 1);
    expect(nextTick('0 30 9 * * *', 'America/New_York', T)).toBe(Date.UTC(2026, 0, 1, 14, 30) / 1000);
    expect(ticksBetween('*/10 * * * * *', 'UTC', T - 30, T, 100)).toEqual([T - 30, T - 20, T - 10, T]);
    expect(ticksBetween('*/10 * * * * *', 'UTC', T - 30, T, 2)).toEqual([T - 10, T]);
    expect(cronProblem('bad cron', 'UTC')).toBe(
      'must have five fields (minute hour day month weekday), or six with seconds first; this has 2',
    );
    expect(cronProblem('@daily', 'UTC')).toBeUndefined();
    expect(cronProblem('* * * * *', 'UTC')).toBeUndefined();
    expect(timeZoneProblem('Nope/Zone')).toMatch(/unknown time zone "Nope\/Zone"/);
    expect(timeZoneProblem('Europe/Berlin')).toBeUndefined();
  });
});

describe('catch-up', () => {
  const missed = { ...hourly, nextFireAt: T - 5 * 3600 };

  it('all: every missed tick up to the cap, oldest first', () => {
    expect(plan({ ...missed, catchUp: 'all' }, T + 10, null)).toEqual({
      ticks: [T - 5 * 3600, T - 4 * 3600, T - 3 * 3600, T - 2 * 3600, T - 3600, T],
      nextFireAt: T + 3600,
      defer: false,
      cancelPrevious: false,
    });
    expect(plan({ ...missed, catchUp: 'all', catchUpCap: 2 }, T + 10, null).ticks).toEqual([T - 3600, T]);
  });

  it('latest: only the latest; none: only the latest, and only on time', () => {
    expect(plan({ ...missed, catchUp: 'latest' }, T + 600, null).ticks).toEqual([T]);
    expect(plan({ ...missed, catchUp: 'none' }, T + 10, null).ticks).toEqual([T]);
    expect(plan({ ...missed, catchUp: 'none' }, T + 600, null)).toMatchObject({ ticks: [], nextFireAt: T + 3600 });
  });

  it('a schedule not yet due fires nothing', () => {
    expect(plan({ ...hourly, catchUp: 'all', nextFireAt: T + 3600 }, T + 10, null).ticks).toEqual([]);
  });
});

describe('overlap', () => {
  const due = { ...hourly, catchUp: 'latest' as const, nextFireAt: T };

  it('an ended previous run never holds a tick back', () => {
    for (const overlap of ['skip', 'queue', 'cancel'] as const)
      expect(plan({ ...due, overlap }, T + 1, 'completed')).toMatchObject({ ticks: [T], cancelPrevious: false });
  });

  it('skip drops the tick, queue keeps it due, cancel fires and cancels the previous run', () => {
    expect(plan({ ...due, overlap: 'skip' }, T + 1, 'running')).toEqual({
      ticks: [],
      nextFireAt: T + 3600,
      defer: false,
      cancelPrevious: false,
    });
    expect(plan({ ...due, overlap: 'queue' }, T + 1, 'waiting')).toEqual({
      ticks: [],
      nextFireAt: T,
      defer: true,
      cancelPrevious: false,
    });
    expect(plan({ ...due, overlap: 'cancel' }, T + 1, 'queued')).toEqual({
      ticks: [T],
      nextFireAt: T + 3600,
      defer: false,
      cancelPrevious: true,
    });
  });

  // `previous` ended: the store passes a run that ended before the due tick as null, so this one held the tick.
  it('queue fires the tick it held alone once the previous run ends; the tick catch-up keeps stays due', () => {
    const held = { ...hourly, overlap: 'queue' as const, nextFireAt: T };
    expect(plan({ ...held, catchUp: 'none' }, T + 1800, 'completed')).toEqual({
      ticks: [T],
      nextFireAt: T + 3600,
      defer: false,
      cancelPrevious: false,
    });
    // none keeps no tick beside the held one, not even one on time: it would be late by the time it could fire.
    expect(plan({ ...held, catchUp: 'none' }, T + 2 * 3600 + 10, 'failed')).toMatchObject({
      ticks: [T],
      nextFireAt: T + 3 * 3600,
    });
    // latest: the latest missed tick is the next due, the ones before it are dropped.
    expect(plan({ ...held, catchUp: 'latest' }, T + 3 * 3600 + 600, 'cancelled')).toMatchObject({
      ticks: [T],
      nextFireAt: T + 3 * 3600,
    });
    // all: the oldest of the most recent `catchUpCap` is the next due, the ones after it are read again then.
    expect(plan({ ...held, catchUp: 'all', catchUpCap: 2 }, T + 3 * 3600 + 600, 'completed')).toMatchObject({
      ticks: [T],
      nextFireAt: T + 2 * 3600,
    });
    // That next due tick is held in turn: it fires when the run of this one ends, with the cap read from it.
    expect(
      plan({ ...held, catchUp: 'all', catchUpCap: 2, nextFireAt: T + 2 * 3600 }, T + 5 * 3600 + 600, 'completed'),
    ).toMatchObject({ ticks: [T + 2 * 3600], nextFireAt: T + 4 * 3600 });
    // No previous run that went past the tick: a late tick was missed, not held.
    expect(plan({ ...held, catchUp: 'none' }, T + 1800, null).ticks).toEqual([]);
  });

  it('queue catches up missed ticks one at a time, oldest first; skip and cancel fire them at once', () => {
    const missed = { ...hourly, catchUp: 'all' as const, nextFireAt: T - 5 * 3600 };
    expect(plan({ ...missed, overlap: 'queue' }, T + 10, null)).toEqual({
      ticks: [T - 5 * 3600],
      nextFireAt: T - 4 * 3600,
      defer: false,
      cancelPrevious: false,
    });
    expect(plan({ ...missed, overlap: 'queue', catchUp: 'latest' }, T + 10, null)).toMatchObject({
      ticks: [T],
      nextFireAt: T + 3600,
    });
    for (const overlap of ['skip', 'cancel'] as const)
      expect(plan({ ...missed, overlap }, T + 10, null)).toMatchObject({
        ticks: [0, 1, 2, 3, 4, 5].map((h) => T - (5 - h) * 3600),
        nextFireAt: T + 3600,
      });
  });
});
