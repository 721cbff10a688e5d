/**
 * The few numbers the bench reports. Medians, not means: one round that lands on a checkpoint of the WAL
 * or a neighbour's fsync should not move the figure.
 */

/** What one backend at one setting measured: the product, its floor, and their ratio. */
export interface Figure {
  /** Median µs per step of runAgent over the store. */
  stepUs: number;
  /** Median µs per step of the bare protocol on the same kind of database. */
  floorUs: number;
  /** stepUs / floorUs. */
  ratio: number;
}

/** Per-round samples (µs/step) kept for the human table's spread column. */
export interface Samples {
  product: number[];
  floor: number[];
}

export function median(values: readonly number[]): number {
  if (values.length === 0) throw new RangeError('median of no values');
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

export function figure(samples: Samples): Figure {
  const stepUs = median(samples.product);
  const floorUs = median(samples.floor);
  return { stepUs: round(stepUs, 1), floorUs: round(floorUs, 1), ratio: round(stepUs / floorUs, 3) };
}

/** µs per step of one timed round. */
export async function timeRound(steps: number, round: () => unknown): Promise<number> {
  const started = process.hrtime.bigint();
  await round();
  return Number(process.hrtime.bigint() - started) / 1000 / steps;
}

/**
 * Runs `rounds` pairs, alternating floor and product (ABAB…) so that machine noise hits both alike, after
 * one discarded pair that warms the JIT, the page cache and the statement caches.
 */
export async function interleave(
  rounds: number,
  floor: (round: number) => Promise<number>,
  product: (round: number) => Promise<number>,
): Promise<Samples> {
  await floor(-1);
  await product(-1);
  const samples: Samples = { product: [], floor: [] };
  for (let i = 0; i < rounds; i++) {
    samples.floor.push(await floor(i));
    samples.product.push(await product(i));
  }
  return samples;
}

export function spread(values: readonly number[]): string {
  return `${Math.min(...values).toFixed(1)}–${Math.max(...values).toFixed(1)}`;
}

function round(value: number, digits: number): number {
  const f = 10 ** digits;
  return Math.round(value * f) / f;
}
