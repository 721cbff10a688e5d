/**
 * The throughput section's rounds folded into one figure (#29 item 1: medians over interleaved rounds). Each
 * number of a window is the median of that number over the rounds, its parts taken apart: a CPU µs a step of the
 * workers and one of their backends are each a median, as the lone run's are. The steps a second of the seconds
 * inside the windows keep their extremes: the lowest and the highest of any round.
 */
import { median } from './stats';
import type { Throughput } from './throughput-run';
import type { WindowFigure } from './window';

/** Each side's window, the median over the rounds of each of its numbers. */
export function medianThroughput(rounds: readonly Throughput[]): Throughput {
  return {
    product: medianWindow(rounds.map((r) => r.product)),
    floor: medianWindow(rounds.map((r) => r.floor)),
  };
}

/** The median of per-round ratios: product against the floor measured beside it in the same round. */
export function medianRatio(rounds: readonly Throughput[], of: (w: WindowFigure) => number | null): number | null {
  const ratios = rounds.flatMap((r) => {
    const [product, floor] = [of(r.product), of(r.floor)];
    return product === null || floor === null || floor === 0 ? [] : [product / floor];
  });
  return ratios.length === 0 ? null : median(ratios);
}

function medianWindow(windows: readonly WindowFigure[]): WindowFigure {
  const first = windows[0];
  if (first === undefined) throw new RangeError('no throughput round to take a median of');
  return {
    ...(medianOf(windows) as WindowFigure),
    perSecond: {
      min: Math.min(...windows.map((w) => w.perSecond.min)),
      max: Math.max(...windows.map((w) => w.perSecond.max)),
    },
  };
}

/** The median of each number at the same place in every value; null where any round has none. */
function medianOf(values: readonly unknown[]): unknown {
  const [first] = values;
  if (typeof first === 'number') {
    return values.every((v) => typeof v === 'number') ? median(values as number[]) : null;
  }
  if (first === null || first === undefined) return first;
  if (typeof first !== 'object') return first;
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(first)) {
    out[key] = medianOf(values.map((v) => (v as Record<string, unknown> | null)?.[key] ?? null));
  }
  return out;
}
