import { describe, expect, it } from 'vitest';
import { axisWidth, formatMs } from '../../app/components/chart-format';
import {
  durationText,
  lastActivity,
  recentRate,
  runDuration,
  stepsPerMinute,
  THROUGHPUT_WINDOW_S,
  utcText,
} from '../../lib/data/rates';

describe('the runs page throughput', () => {
  it('is the steps committed over the last minute, per minute: a run doing 138 a minute shows 138', () => {
    // The old card divided an hour's count by 60 minutes: 138 steps of a run that had run one minute read 2.3.
    expect(THROUGHPUT_WINDOW_S).toBe(60);
    expect(stepsPerMinute(138)).toBe(138);
    expect(stepsPerMinute(69, 30)).toBe(138);
    expect(stepsPerMinute(0)).toBe(0);
  });
});

describe("a run's recent rate", () => {
  it('is measured over the minute before the latest commit, not over gaps before it', () => {
    // 139 commits 60/138 s apart (138 a minute), after an hour of nothing: the rate is 138, not 2.3.
    const timings = [
      { committedAt: 1000 },
      ...Array.from({ length: 139 }, (_, i) => ({ committedAt: 4600 + (i * 60) / 138 })),
    ];
    const rate = recentRate(timings)!;
    expect(rate.perSecond * 60).toBeCloseTo(138, 6);
    expect(rate.windowSeconds).toBeCloseTo(60, 6);
  });

  it('has no rate with fewer than two commits in that minute', () => {
    expect(recentRate([])).toBeNull();
    expect(recentRate([{ committedAt: 10 }])).toBeNull();
    expect(recentRate([{ committedAt: 10 }, { committedAt: 10 }])).toBeNull();
  });
});

describe("a run's last activity", () => {
  it('is the latest of the run row and its progress: a step moves only the progress', () => {
    expect(lastActivity(1000, 1025)).toBe(1025);
    expect(lastActivity(1030, 1025, null)).toBe(1030);
  });

  it('is null when nothing has a usable time, for the page to say never', () => {
    expect(lastActivity(null, undefined, 0, Number.NaN)).toBeNull();
  });
});

describe('run times', () => {
  it('duration to the end, or to now while the run has not ended', () => {
    expect(runDuration(100, 400, 1000)).toEqual({ seconds: 300, ongoing: false });
    expect(runDuration(100, null, 1000)).toEqual({ seconds: 900, ongoing: true });
    expect(runDuration(null, null, 1000)).toBeNull();
  });

  it('reads as people read durations', () => {
    expect([0.85, 4.25, 42, 185, 7440, 266_400].map(durationText)).toEqual([
      '850 ms',
      '4.3 s',
      '42 s',
      '3 m 05 s',
      '2 h 04 m',
      '3 d 2 h',
    ]);
  });

  it('absolute times in UTC, none for a time no Date can hold', () => {
    expect(utcText(1_764_576_303)).toBe('2025-12-01 08:05:03 UTC');
    expect(utcText(1e15)).toBeNull();
    expect(utcText(0)).toBeNull();
    expect(utcText(null)).toBeNull();
  });
});

describe('chart tick labels', () => {
  it('give sub-millisecond ticks distinct labels in microseconds', () => {
    // recharts' nice ticks for steps of 0.2-0.9 ms; rounded to whole ms they read "0 ms, 0 ms, 1 ms, 1 ms, 1 ms".
    expect([0, 0.25, 0.5, 0.75, 1].map(formatMs)).toEqual(['0', '250 µs', '500 µs', '750 µs', '1 ms']);
    expect([0.005, 1.25, 12.5, 600, 1500, 42_000].map(formatMs)).toEqual([
      '5 µs',
      '1.25 ms',
      '12.5 ms',
      '600 ms',
      '1.5 s',
      '42 s',
    ]);
    const ticks = [0, 0.2, 0.4, 0.6, 0.8].map(formatMs);
    expect(new Set(ticks).size).toBe(ticks.length);
  });

  it('leave room for the longest label', () => {
    // "600 ms" and "750 µs" are six characters: the old fixed 56 px, less the tick gap, clipped them.
    expect(axisWidth([120, 580])).toBeGreaterThanOrEqual(Math.ceil('750 ms'.length * 6.6 + 12));
    expect(axisWidth([0.2, 0.9])).toBeGreaterThanOrEqual(Math.ceil('750 µs'.length * 6.6 + 12));
  });
});
