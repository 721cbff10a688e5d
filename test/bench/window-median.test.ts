/**
 * The throughput section's rounds folded into one figure (bench/window-median.ts): each number the median of the
 * rounds', the seconds' extremes kept, a part no round could read left null, and each ratio the median of the
 * rounds' own ratios rather than a ratio of medians.
 */
import { describe, expect, it } from 'vitest';
import type { Throughput } from '../../bench/throughput-run';
import type { WindowFigure } from '../../bench/window';
import { medianRatio, medianThroughput } from '../../bench/window-median';

function window(stepsPerSec: number, cpu: { worker: number; pg: number | null }, min: number, max: number) {
  return {
    steps: stepsPerSec * 5,
    seconds: 5,
    stepsPerSec,
    perSecond: { min, max },
    cpuPct: { worker: cpu.worker / 10, pg: cpu.pg === null ? null : cpu.pg / 10 },
    cpuUsPerStep: cpu,
    kernelShare: { worker: 0.1, pg: 0.2 },
    machine: null,
    diskFlushesPerSec: 100,
    roundTripsPerStep: null,
    countedPerStep: {},
  } satisfies WindowFigure;
}

const rounds: Throughput[] = [
  { product: window(100, { worker: 10, pg: 30 }, 90, 110), floor: window(200, { worker: 5, pg: 15 }, 180, 220) },
  { product: window(300, { worker: 50, pg: 10 }, 250, 350), floor: window(250, { worker: 6, pg: 24 }, 240, 260) },
  { product: window(200, { worker: 20, pg: null }, 150, 260), floor: window(400, { worker: 7, pg: 33 }, 380, 420) },
];

describe('medians of throughput rounds', () => {
  it('takes each number apart, keeps the extremes of the seconds, and nulls a part a round lacks', () => {
    const { product, floor } = medianThroughput(rounds);
    expect(product.stepsPerSec).toBe(200);
    expect(product.cpuUsPerStep).toEqual({ worker: 20, pg: null });
    expect(product.perSecond).toEqual({ min: 90, max: 350 });
    expect(product.machine).toBeNull();
    expect(floor.stepsPerSec).toBe(250);
    expect(floor.cpuUsPerStep).toEqual({ worker: 6, pg: 24 });
    expect(floor.perSecond).toEqual({ min: 180, max: 420 });
  });

  it("is the median of each round's ratio, and skips a round that cannot say", () => {
    // 0.5, 1.2 and 0.5: not 200 / 250, the ratio of the medians.
    expect(medianRatio(rounds, (w) => w.stepsPerSec)).toBe(0.5);
    const cpu = (w: WindowFigure) => (w.cpuUsPerStep.pg === null ? null : w.cpuUsPerStep.worker! + w.cpuUsPerStep.pg!);
    // 40 / 20 and 60 / 30; the third round's backends were not read.
    expect(medianRatio(rounds, cpu)).toBe(2);
  });
});
