/**
 * The throughput section of `npm run bench`: many runs in flight on one store, in steps a second, beside a
 * floor measured in the same run (bench/throughput-sqlite.ts, bench/throughput-postgres.ts), with what each
 * process spent meanwhile, which says what limits the figure. Rounds of it interleave the backends, each round
 * a floor's window and then the product's, and every figure is the median over the rounds (window-median.ts).
 */

import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { PER_STEP_NAMES } from './stats';
import { throughputPostgres } from './throughput-postgres';
import type { Throughput, ThroughputOptions } from './throughput-run';
import { COUNT_WINDOW_MS, throughputSqlite } from './throughput-sqlite';
import type { WindowFigure } from './window';
import { medianRatio, medianThroughput } from './window-median';

/**
 * Issue #29's goals at 64 runs, each against the floor of its own round: SQLite's steps a second at least 3×
 * the serial floor's and its WAL pages a step at most 2; PostgreSQL's at least 0.7× the 64-connection floor's,
 * and its CPU a step (clients and backends) at most 2× the floor's.
 */
export const THROUGHPUT_GOALS = {
  sqlite: { floorRatio: 3, walPages: 2 },
  postgres: { floorRatio: 0.7, cpuRatio: 2 },
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
  /** Interleaved rounds the figures are medians of. */
  rounds: number;
  floor: Limits;
}

export interface ThroughputSection {
  sqlite?: Figures;
  postgres?: Figures & {
    workers: number;
    roundTripsPerStep: number | null;
    /** The product's CPU a step (workers and backends) over the floor's, the median of the rounds' ratios. */
    cpuRatio: number | null;
  };
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
  /** Interleaved rounds: each a floor's window and the product's, on each backend in turn. */
  rounds: number;
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

  const sqliteRounds: Throughput[] = [];
  const postgresRounds: Throughput[] = [];
  let postgresSkipped: string | null = null;
  for (let round = 1; round <= options.rounds; round++) {
    const of = `round ${round} of ${options.rounds}`;
    options.log(`throughput sqlite, ${of}: ${THROUGHPUT_RUNS} runs: the floor, then one worker…`);
    const dir = join(options.dir, `round-${round}`);
    mkdirSync(dir);
    try {
      sqliteRounds.push(await throughputSqlite({ ...common, dir }));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    if (options.postgresUrl === null || postgresSkipped !== null) continue;
    options.log(`throughput postgres, ${of}: ${THROUGHPUT_RUNS} runs: the floor, then ${POSTGRES_WORKERS} workers…`);
    const pg = await throughputPostgres({
      ...common,
      url: options.postgresUrl,
      workers: POSTGRES_WORKERS,
      onInterrupt: options.onInterrupt,
    });
    if ('skipped' in pg) postgresSkipped = pg.skipped;
    else postgresRounds.push(pg);
  }

  const sqlite = medianThroughput(sqliteRounds);
  json.sqlite = {
    runs: THROUGHPUT_RUNS,
    ...rates(sqlite, sqliteRounds),
    ...limits(sqlite.product, 'worker'),
    floor: limits(sqlite.floor, 'bench'),
  };
  const walPages = json.sqlite.perStep.walPages ?? null;
  rows.push(
    row('sqlite FULL, 1 worker', json.sqlite, [
      ratioGoal(json.sqlite.floorRatio, THROUGHPUT_GOALS.sqlite.floorRatio),
      atMost('WAL pages a step', walPages, THROUGHPUT_GOALS.sqlite.walPages),
    ]),
  );
  spending.push(spent('sqlite product', sqlite.product), spent('sqlite floor', sqlite.floor));
  perStepRows.push(...perStepLines('sqlite FULL', json.sqlite));

  if (postgresSkipped !== null) skipped.push(`throughput postgres: SKIPPED: ${postgresSkipped}`);
  else if (postgresRounds.length > 0) {
    const pg = medianThroughput(postgresRounds);
    const cpuRatio = medianRatio(postgresRounds, totalCpu);
    json.postgres = {
      runs: THROUGHPUT_RUNS,
      workers: POSTGRES_WORKERS,
      ...rates(pg, postgresRounds),
      roundTripsPerStep: pg.product.roundTripsPerStep,
      cpuRatio: cpuRatio === null ? null : round(cpuRatio, 3),
      ...limits(pg.product, 'worker'),
      floor: limits(pg.floor, 'bench'),
    };
    rows.push(
      row(`postgres, ${POSTGRES_WORKERS} workers`, json.postgres, [
        ratioGoal(json.postgres.floorRatio, THROUGHPUT_GOALS.postgres.floorRatio),
        atMost('CPU a step vs floor', json.postgres.cpuRatio, THROUGHPUT_GOALS.postgres.cpuRatio, '×'),
      ]),
    );
    spending.push(spent('postgres product', pg.product), spent('postgres floor', pg.floor));
    perStepRows.push(...perStepLines('postgres', json.postgres));
  }
  const text = [
    `throughput: ${THROUGHPUT_RUNS} runs of zero-cost steps, committed rows counted over ${options.windowMs / 1000} s ` +
      `after ${warmupMs / 1000} s of warm-up; floor = ${THROUGHPUT_RUNS} loops of one INSERT transaction a step on ` +
      `bare connections, measured in the same round; medians of ${options.rounds} interleaved rounds, ` +
      "ratios the median of each round's",
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

/** The medians' steps a second, and the product's against its floor: the median of the rounds' ratios. */
function rates(t: Throughput, rounds: readonly Throughput[]) {
  return {
    stepsPerSec: t.product.stepsPerSec,
    floorStepsPerSec: t.floor.stepsPerSec,
    floorRatio: round(medianRatio(rounds, (w) => w.stepsPerSec)!, 3),
    windowSec: t.product.seconds,
    rounds: rounds.length,
  };
}

/** A side's CPU a step, its clients' and its backends' (null when the backends could not be read). */
function totalCpu(w: WindowFigure): number | null {
  const client = w.cpuUsPerStep.worker ?? w.cpuUsPerStep.bench ?? null;
  const backend = w.cpuUsPerStep.pg ?? null;
  return client === null || backend === null ? null : client + backend;
}

/** The CPU a step cost in the processes that issue its statements (`client`) and the backends serving them. */
function cpuPerStep(w: WindowFigure, client: string): Record<string, number | null> {
  // Each part to a tenth (a median of an even number of rounds has more), and the total their sum: the parts add up.
  const clientCpuUs = tenth(w.cpuUsPerStep[client]);
  const backendCpuUs = tenth(w.cpuUsPerStep.pg);
  if (backendCpuUs === null) return {};
  return {
    clientCpuUs,
    backendCpuUs,
    totalCpuUs: clientCpuUs === null ? null : round(clientCpuUs + backendCpuUs, 1),
  };
}

const tenth = (value: number | null | undefined) => (value === undefined || value === null ? null : round(value, 1));

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

/** A goal's cell and whether the figure meets it (null: not measured, so not met). */
type Judged = { goal: string; met: boolean };

const ratioGoal = (ratio: number, goal: number): Judged => ({ goal: `≥ ${goal}×`, met: ratio >= goal });

function atMost(what: string, value: number | null, goal: number, unit = ''): Judged {
  const shown = value === null ? '?' : `${value.toFixed(2)}${unit}`;
  return { goal: `${what} ${shown} ≤ ${goal}${unit}`, met: value !== null && value <= goal };
}

function row(label: string, f: Figures, goals: Judged[]): string[] {
  return [
    label,
    int(f.stepsPerSec),
    int(f.floorStepsPerSec),
    `${f.floorRatio.toFixed(2)}×`,
    goals.map((g) => g.goal).join('; '),
    goals.every((g) => g.met) ? 'yes' : 'NO',
    `${int(f.perSecond.min)}–${int(f.perSecond.max)}`,
    `${int(f.floor.perSecond.min)}–${int(f.floor.perSecond.max)}`,
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
