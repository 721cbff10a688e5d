/** The run's chart points as the charts' columns. */
import type { CumulativeSeries, DurationSeries } from '@/app/components/run-charts';
import type { RunDetail } from '@/lib/data/run-detail';

/** Columns, rounded to what a 240-pixel chart can show: three significant digits, so 0.25 ms stays 0.25 ms. */
export function durationSeries(points: RunDetail['durations']): DurationSeries {
  return { step: points.map((p) => p.step), ms: points.map((p) => Number(p.durationMs.toPrecision(3))) };
}

export function cumulativeSeries(points: RunDetail['cumulative']): CumulativeSeries {
  return {
    t: points.map((p) => Math.round(p.t)),
    executed: points.map((p) => p.executed),
    skipped: points.map((p) => p.skipped),
    awaited: points.map((p) => p.awaited),
  };
}
