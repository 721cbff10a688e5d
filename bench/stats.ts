/**
 * The few numbers the bench reports. Medians, not means: one round that lands on a checkpoint of the WAL
 * or a neighbour's fsync should not move the figure.
 */

/** What one backend at one setting measured: the product, its two floors, and its ratio to each. */
export interface Figure {
  /** Median µs per step of runAgent over the store. */
  stepUs: number;
  /** Median µs per step of the bare protocol on the same kind of database: two commits a step (claim, commit). */
  floorUs: number;
  /** stepUs / floorUs. */
  ratio: number;
  /** Median µs per step of the bare protocol in one commit a step (the next claim rides in the commit). */
  oneCommitFloorUs: number;
  /** stepUs / oneCommitFloorUs. */
  oneCommitRatio: number;
  /** What a committed step spent of the resource that limits it, median of the rounds, for each of the three. */
  perStep?: PerStep;
  /** Which rounds `perStep` was read in: the timed ones, or an untimed counting pass of its own. */
  perStepFrom?: string;
}

/** Per-round samples (µs/step) kept for the human table's spread column. */
export interface Samples {
  product: number[];
  /** The two-commit floor. */
  floor: number[];
  oneCommitFloor: number[];
}

/** How the per-step tables name each figure, lone run and throughput alike. */
export const PER_STEP_NAMES: Record<string, string> = {
  walPages: 'WAL pages',
  commits: 'WAL commits',
  fsyncs: 'fsyncs',
  clientCpuUs: 'client CPU µs',
  backendCpuUs: 'backend CPU µs',
  totalCpuUs: 'total CPU µs',
};

/**
 * Per round, what each of the three spent per committed step, by resource (`walPages`, `clientCpuUs`, …): read
 * around the timed rounds (PostgreSQL's CPU), or in an untimed counting pass of as many rounds (SQLite's WAL).
 */
export type PerStepSamples = Record<keyof Samples, Record<string, number[]>>;
export type PerStep = Record<keyof Samples, Record<string, number>>;

export function perStepSamples(): PerStepSamples {
  return { product: {}, floor: {}, oneCommitFloor: {} };
}

/** Keeps one round's per-step figures; the warm-up's (round -1) are dropped like its time. */
export function keep(samples: PerStepSamples, what: keyof Samples, round: number, values: Record<string, number>) {
  if (round < 0) return;
  for (const [name, value] of Object.entries(values)) (samples[what][name] ??= []).push(value);
}

/** Figures that are the sum of two others: the sum of their medians, so that the parts add up to it. */
const SUMS: Record<string, [string, string]> = { totalCpuUs: ['clientCpuUs', 'backendCpuUs'] };

export function perStepMedians(samples: PerStepSamples): PerStep {
  const of = (by: Record<string, number[]>) => {
    const medians: Record<string, number> = {};
    for (const [name, values] of Object.entries(by)) medians[name] = round(median(values), 2);
    for (const [sum, [a, b]] of Object.entries(SUMS)) {
      if (medians[a] !== undefined && medians[b] !== undefined) medians[sum] = round(medians[a] + medians[b], 2);
    }
    return medians;
  };
  return { product: of(samples.product), floor: of(samples.floor), oneCommitFloor: of(samples.oneCommitFloor) };
}

export function median(values: readonly number[]): number {
  if (values.length === 0) throw new RangeError('median of no values');
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

export function figure(samples: Samples & { perStep?: PerStepSamples; perStepFrom?: string }): Figure {
  const stepUs = median(samples.product);
  const floorUs = median(samples.floor);
  const oneCommitFloorUs = median(samples.oneCommitFloor);
  return {
    stepUs: round(stepUs, 1),
    floorUs: round(floorUs, 1),
    ratio: round(stepUs / floorUs, 3),
    oneCommitFloorUs: round(oneCommitFloorUs, 1),
    oneCommitRatio: round(stepUs / oneCommitFloorUs, 3),
    ...(samples.perStep ? { perStep: perStepMedians(samples.perStep) } : {}),
    ...(samples.perStepFrom ? { perStepFrom: samples.perStepFrom } : {}),
  };
}

/** µs per step of one timed round. */
export async function timeRound(steps: number, round: () => unknown): Promise<number> {
  const started = process.hrtime.bigint();
  await round();
  return Number(process.hrtime.bigint() - started) / 1000 / steps;
}

/** One timed round of each thing measured; round -1 is the discarded warm-up. */
export type Rounds = Record<keyof Samples, (round: number) => Promise<number>>;

/**
 * Runs `rounds` of each in turn, the floors and the product alternating (ABCABC…) so that machine noise hits
 * all alike, after one discarded round of each that warms the JIT, the page cache and the statement caches.
 */
export async function interleave(rounds: number, each: Rounds): Promise<Samples> {
  const order = ['floor', 'oneCommitFloor', 'product'] as const;
  for (const what of order) await each[what](-1);
  const samples: Samples = { product: [], floor: [], oneCommitFloor: [] };
  for (let i = 0; i < rounds; i++) for (const what of order) samples[what].push(await each[what](i));
  return samples;
}

export function spread(values: readonly number[]): string {
  return `${Math.min(...values).toFixed(1)}–${Math.max(...values).toFixed(1)}`;
}

function round(value: number, digits: number): number {
  const f = 10 ** digits;
  return Math.round(value * f) / f;
}
