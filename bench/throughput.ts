/**
 * The throughput section of `npm run bench`: many runs in flight on one store, in steps a second, beside a
 * floor measured in the same run (bench/throughput-sqlite.ts, bench/throughput-postgres.ts), with what each
 * process spent meanwhile, which says what limits the figure.
 */

import { PER_STEP_NAMES } from './stats';
import { throughputPostgres } from './throughput-postgres';
import type { Throughput, ThroughputOptions } from './throughput-run';
import { COUNT_WINDOW_MS, throughputSqlite } from './throughput-sqlite';
import type { WindowFigure } from './window';

/** Issue #17's goals: steps a second, and times the floor. */
export const THROUGHPUT_GOALS = {
  sqlite: { stepsPerSec: 10_000, floorRatio: 5 },
  postgres: { stepsPerSec: 5_000, floorRatio: 3 },
} as const;

export const THROUGHPUT_RUNS = 64;
export const POSTGRES_WORKERS = 4;
const WARMUP_MS = 2000;
/**
 * Each run's steps: enough for the fastest rate worth planning for (100,000 steps a second over all runs) to
 * last the warm-up, the window, SQLite's counting window and 10 s to spare; the bench checks that no run ended
 * before the windows did.
 */
const PLANNED_RATE = 100_000;

/** The product's figures at the top (what it spent beside them), the floor's spending under `floor`. */
interface Figures extends Limits {
  runs: number;
  stepsPerSec: number;
  floorStepsPerSec: number;
  /** stepsPerSec / floorStepsPerSec. */
  floorRatio: number;
  windowSec: number;
  floor: Limits;
}

export interface ThroughputSection {
  sqlite?: Figures;
  postgres?: Figures & { workers: number; roundTripsPerStep: number | null };
}

/**
 * What a phase spent over its window: CPU per process role (`workerPct`, `pgPct`, `benchPct`, and the
 * machine's) in percent of one core, and per step in µs; the disk's flushes.
 */
interface Limits {
  perSecond: { min: number; max: number };
  cpu: Record<string, number | null>;
  cpuUsPerStep: Record<string, number | null>;
  kernelShare: Record<string, number | null>;
  diskFlushesPerSec: number | null;
  /** Disk flushes per committed step: what an fsync is shared by (the whole disk's, so an upper bound). */
  flushesPerStep: number | null;
  /**
   * The limiting resource a committed step spent: SQLite's WAL pages, commits and fsyncs (bench/wal.ts);
   * PostgreSQL's CPU µs in the client processes (the workers, or the bench's floor loops) and their backends.
   */
  perStep: Record<string, number | null>;
  /** Which window `perStep` was read over: the timed one, or SQLite's counting window after it. */
  perStepFrom: string;
}

/** THROUGHPUT_RUNS runs, a warm-up, a window of `windowMs` and steps enough that none ends before the windows do. */
export function throughputOptions(windowMs: number): ThroughputOptions {
  const warmupMs = Math.min(WARMUP_MS, windowMs);
  const countMs = Math.min(COUNT_WINDOW_MS, windowMs);
  const stepsPerRun = Math.ceil((PLANNED_RATE * (warmupMs + windowMs + countMs + 10_000)) / 1000 / THROUGHPUT_RUNS);
  return { runs: THROUGHPUT_RUNS, warmupMs, windowMs, stepsPerRun };
}

export interface ThroughputRun {
  json: ThroughputSection;
  text: string;
  skipped: string[];
}

export async function benchThroughput(options: {
  windowMs: number;
  dir: string;
  postgresUrl: string | null;
  log: (message: string) => void;
  onInterrupt: (undo: () => Promise<void>) => void;
}): Promise<ThroughputRun> {
  const common = throughputOptions(options.windowMs);
  const countMs = Math.min(COUNT_WINDOW_MS, options.windowMs);
  const warmupMs = common.warmupMs;
  const json: ThroughputSection = {};
  const skipped: string[] = [];
  const rows: string[][] = [];
  const spending: string[] = [];
  const perStepRows: string[][] = [];

  options.log(`throughput sqlite: ${THROUGHPUT_RUNS} runs: the floor, then one worker…`);
  const sqlite = await throughputSqlite({ ...common, dir: options.dir });
  json.sqlite = {
    runs: THROUGHPUT_RUNS,
    ...rates(sqlite),
    ...limits(sqlite.product, 'worker'),
    floor: limits(sqlite.floor, 'bench'),
  };
  rows.push(row('sqlite FULL, 1 worker', sqlite, THROUGHPUT_GOALS.sqlite));
  spending.push(spent('sqlite product', sqlite.product), spent('sqlite floor', sqlite.floor));
  perStepRows.push(...perStepLines('sqlite FULL', json.sqlite));

  if (options.postgresUrl !== null) {
    options.log(`throughput postgres: ${THROUGHPUT_RUNS} runs: the floor, then ${POSTGRES_WORKERS} workers…`);
    const pg = await throughputPostgres({
      ...common,
      url: options.postgresUrl,
      workers: POSTGRES_WORKERS,
      onInterrupt: options.onInterrupt,
    });
    if ('skipped' in pg) skipped.push(`throughput postgres: SKIPPED: ${pg.skipped}`);
    else {
      json.postgres = {
        runs: THROUGHPUT_RUNS,
        workers: POSTGRES_WORKERS,
        ...rates(pg),
        roundTripsPerStep: pg.product.roundTripsPerStep,
        ...limits(pg.product, 'worker'),
        floor: limits(pg.floor, 'bench'),
      };
      rows.push(row(`postgres, ${POSTGRES_WORKERS} workers`, pg, THROUGHPUT_GOALS.postgres));
      spending.push(spent('postgres product', pg.product), spent('postgres floor', pg.floor));
      perStepRows.push(...perStepLines('postgres', json.postgres));
    }
  }
  const text = [
    `throughput: ${THROUGHPUT_RUNS} runs of zero-cost steps, committed rows counted over ${options.windowMs / 1000} s ` +
      `after ${warmupMs / 1000} s of warm-up; floor = ${THROUGHPUT_RUNS} loops of one INSERT transaction a step on ` +
      'bare connections, measured in the same run',
    ...table(rows),
    'what each spent over its window: CPU in % of one core and µs per step; the machine and the disk count every ' +
      "process on them (others' = busy time none of ours spent)",
    ...spending.map((line) => `  ${line}`),
    `what a committed step spent: SQLite's WAL pages and commits (each an fsync at FULL; checkpoints not ` +
      `counted) over a ${countMs / 1000} s counting window right after each timed one, checkpoints held off for it ` +
      "only; PostgreSQL's CPU µs in the clients (product: the workers; floor: the bench's loops) and in their " +
      'backends, over the timed window',
    ...perStepTable(perStepRows),
  ].join('\n');
  return { json, text, skipped };
}

function rates(t: Throughput) {
  return {
    stepsPerSec: t.product.stepsPerSec,
    floorStepsPerSec: t.floor.stepsPerSec,
    floorRatio: round(t.product.stepsPerSec / t.floor.stepsPerSec, 3),
    windowSec: t.product.seconds,
  };
}

/** The CPU a step cost in the processes that issue its statements (`client`) and the backends serving them. */
function cpuPerStep(w: WindowFigure, client: string): Record<string, number | null> {
  const clientCpuUs = w.cpuUsPerStep[client] ?? null;
  const backendCpuUs = w.cpuUsPerStep.pg ?? null;
  if (backendCpuUs === null) return {};
  return {
    clientCpuUs,
    backendCpuUs,
    totalCpuUs: clientCpuUs === null ? null : round(clientCpuUs + backendCpuUs, 1),
  };
}

function limits(w: WindowFigure, client: 'worker' | 'bench'): Limits {
  const cpu: Record<string, number | null> = {};
  for (const [role, value] of Object.entries(w.cpuPct)) cpu[`${role}Pct`] = value;
  cpu.machinePct = w.machine?.busyPct ?? null;
  cpu.othersPct = w.machine?.othersPct ?? null;
  cpu.iowaitPct = w.machine?.iowaitPct ?? null;
  return {
    perSecond: w.perSecond,
    cpu,
    cpuUsPerStep: w.cpuUsPerStep,
    kernelShare: w.kernelShare,
    diskFlushesPerSec: w.diskFlushesPerSec,
    flushesPerStep:
      w.diskFlushesPerSec === null || w.stepsPerSec === 0 ? null : round(w.diskFlushesPerSec / w.stepsPerSec, 3),
    perStep: { ...w.countedPerStep, ...cpuPerStep(w, client) },
    perStepFrom: w.countedOver
      ? `a ${w.countedOver.seconds} s counting window after the timed one (${w.countedOver.steps} steps), ` +
        'checkpoints held off for it only'
      : 'the timed window',
  };
}

function perStepLines(label: string, figures: Limits & { floor: Limits }): string[][] {
  const cell = (value: number | null | undefined) => (value === null || value === undefined ? '?' : value.toFixed(2));
  return Object.keys(figures.perStep).map((name) => [
    label,
    PER_STEP_NAMES[name] ?? name,
    cell(figures.perStep[name]),
    cell(figures.floor.perStep[name]),
  ]);
}

function perStepTable(body: string[][]): string[] {
  if (body.length === 0) return [];
  const head = ['backend', 'per committed step', 'product', 'floor'];
  const widths = head.map((h, c) => Math.max(h.length, ...body.map((line) => line[c]!.length)));
  const format = (cells: string[]) =>
    cells.map((cell, c) => (c <= 1 ? cell.padEnd(widths[c]!) : cell.padStart(widths[c]!))).join('  ');
  return [format(head), ...body.map(format)].map((line) => `  ${line}`);
}

/** "sqlite product: worker 95% (410 µs/step), …; machine 198% of 200% (others' 20%, iowait 3%); disk …". */
function spent(label: string, w: WindowFigure): string {
  const parts = [
    Object.entries(w.cpuPct)
      .map(([role, value]) => {
        const kernel = w.kernelShare[role];
        const share = kernel === null || kernel === undefined ? '' : `, ${Math.round(kernel * 100)}% in the kernel`;
        return `${ROLE_NAMES[role] ?? role} ${pct(value)} (${us(w.cpuUsPerStep[role])}${share})`;
      })
      .join(', '),
  ];
  if (w.machine) {
    parts.push(
      `machine ${pct(w.machine.busyPct)} of ${w.machine.cores * 100}% ` +
        `(others' ${pct(w.machine.othersPct)}, iowait ${pct(w.machine.iowaitPct)})`,
    );
  }
  if (w.diskFlushesPerSec !== null) {
    const perStep = w.stepsPerSec === 0 ? '?' : (w.diskFlushesPerSec / w.stepsPerSec).toFixed(2);
    parts.push(`disk ${int(w.diskFlushesPerSec)} flushes/s (${perStep} a step)`);
  }
  if (w.roundTripsPerStep !== null) parts.push(`${w.roundTripsPerStep.toFixed(2)} round trips a step`);
  return `${`${label}:`.padEnd(18)} ${parts.join('; ')}`;
}

const ROLE_NAMES: Record<string, string> = { worker: 'worker(s)', pg: 'pg backends', bench: 'bench' };

function row(label: string, t: Throughput, goal: { stepsPerSec: number; floorRatio: number }): string[] {
  const ratio = t.product.stepsPerSec / t.floor.stepsPerSec;
  const met = t.product.stepsPerSec >= goal.stepsPerSec && ratio >= goal.floorRatio;
  return [
    label,
    int(t.product.stepsPerSec),
    int(t.floor.stepsPerSec),
    `${ratio.toFixed(2)}×`,
    `≥ ${int(goal.stepsPerSec)}, ≥ ${goal.floorRatio}×`,
    met ? 'yes' : 'NO',
    `${int(t.product.perSecond.min)}–${int(t.product.perSecond.max)}`,
    `${int(t.floor.perSecond.min)}–${int(t.floor.perSecond.max)}`,
  ];
}

function table(body: string[][]): string[] {
  const head = ['backend', 'steps/s', 'floor steps/s', 'vs floor', 'goal', 'met', 'range/s', 'floor range/s'];
  const widths = head.map((h, c) => Math.max(h.length, ...body.map((line) => line[c]!.length)));
  const format = (cells: string[]) =>
    cells.map((cell, c) => (c === 0 ? cell.padEnd(widths[c]!) : cell.padStart(widths[c]!))).join('  ');
  return [format(head), ...body.map(format)];
}

const int = (n: number) => Math.round(n).toLocaleString('en');
const pct = (n: number | null | undefined) => (n === null || n === undefined ? '?' : `${Math.round(n)}%`);
const us = (n: number | null | undefined) => (n === null || n === undefined ? '? µs/step' : `${Math.round(n)} µs/step`);

function round(value: number, digits: number): number {
  const f = 10 ** digits;
  return Math.round(value * f) / f;
}
