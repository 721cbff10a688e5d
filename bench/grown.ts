/**
 * `npm run bench -- --only grown`: issue #29 item 5, whether a step costs the same on a store that already holds a
 * million committed steps over ten thousand runs (bench/grown-store.ts) as on an empty one. The lone run (runAgent,
 * `steps` steps a round) and the 64-run throughput (real workers, as bench/throughput.ts runs them) are measured on
 * both stores in interleaved rounds, on each backend, and each round's grown/empty cost is kept: the figure is the
 * median of those ratios (goal ≤ 1.1). Beside the product, the bare one-commit floor on the same two stores says
 * what the bigger b-trees alone cost, and each side's limiting resource per step (SQLite's WAL pages and the CPU
 * of its process, PostgreSQL's CPU in clients and backends) says what grew when a ratio is above the goal: on a
 * shared machine it is the steadier figure.
 *
 * The grown stores are copies of a kept seed, so rounds add to them (a lone round's 1,000 steps, a throughput
 * round's few ten thousand: a few percent of the million) and no round re-seeds. The 64-run rounds are
 * bench/grown-throughput.ts's.
 */
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import pg from 'pg';
import { Checkpoint, runAgent } from '../lib/checkpoint';
import type { Store } from '../lib/store/contract';
import { seedPlan } from '../lib/store/seed/index';
import { openSqliteStore } from '../lib/store/sqlite';
import { GROWN_SCHEMA, GROWN_SEED, grownPostgres, grownSqlite } from './grown-store';
import { grownThroughputPostgres, grownThroughputSqlite, type ThroughputFigure } from './grown-throughput';
import {
  backendCpu,
  loadBackend,
  openFloor as openPostgresFloor,
  serverIsLocal,
  withApplicationName,
} from './postgres';
import { openFloor as openSqliteFloor, type Synchronous } from './sqlite';
import { median, timeRound } from './stats';
import { POSTGRES_WORKERS, THROUGHPUT_RUNS, throughputOptions } from './throughput';
import { walMeter } from './wal';
import { inputs, productRound, runName } from './workload';

// Both sides of each comparison run the same code, from the sources (bench/product.ts has the other choice).
const SOURCES = { Checkpoint, runAgent };

/** Issue #29 item 5: the grown store's cost a step at most this many times the empty store's. */
export const GROWN_GOAL = 1.1;

export interface GrownOptions {
  steps: number;
  rounds: number;
  throughputRounds: number;
  windowMs: number;
  /** A temporary directory the caller removes (the SQLite copies live in it). */
  dir: string;
  postgresUrl: string | null;
  /** Only this backend's figures (--backend); both when unset. */
  backend?: 'sqlite' | 'postgres';
  log: (line: string) => void;
  onInterrupt: (undo: () => Promise<void>) => void;
}

/** One comparison: each side's median, the median of the rounds' grown/empty ratios, and every round's ratio. */
interface Pair {
  empty: number;
  grown: number;
  ratio: number;
  ratios: number[];
}

interface LoneFigure {
  /** µs a step of runAgent. */
  product: Pair;
  /** µs a step of the bare one-commit protocol on the same two stores. */
  oneCommitFloor: Pair;
  /** The product's limiting resource a step, medians: WAL pages and commits, or CPU µs. */
  perStep: { empty: Record<string, number>; grown: Record<string, number> };
}

export interface GrownSection {
  seed: { runs: number; steps: number; committed: number };
  goal: number;
  lone: Record<string, LoneFigure>;
  throughput: Record<string, ThroughputFigure>;
}

export async function benchGrown(
  options: GrownOptions,
): Promise<{ json: GrownSection; text: string; skipped: string[] }> {
  const json: GrownSection = {
    seed: { runs: GROWN_SEED.runs, steps: GROWN_SEED.steps, committed: seedPlan(GROWN_SEED).committed },
    goal: GROWN_GOAL,
    lone: {},
    throughput: {},
  };
  const skipped: string[] = [];
  const grownPath = options.backend === 'postgres' ? null : await grownSqlite(options.dir, options.log);
  if (grownPath !== null) {
    for (const synchronous of ['full', 'normal'] as Synchronous[]) {
      options.log(`grown sqlite ${synchronous}: ${options.rounds} rounds of ${options.steps} steps, empty and grown…`);
      json.lone[`sqlite ${synchronous.toUpperCase()}`] = await loneSqlite(synchronous, grownPath, options);
    }
  }
  let postgres: Awaited<ReturnType<typeof grownPostgres>> | null = null;
  const open = await loadBackend();
  if (options.backend === 'sqlite') {
    // Not asked for.
  } else if (options.postgresUrl === null) skipped.push('grown postgres: SKIPPED: no PostgreSQL URL');
  else if (typeof open === 'string') skipped.push(`grown postgres: SKIPPED: ${open}`);
  else {
    const tag = `waybill_grown_${process.pid}_${randomBytes(3).toString('hex')}`;
    postgres = await grownPostgres(options.postgresUrl, tag, options.log);
    options.onInterrupt(postgres.drop);
  }
  try {
    if (postgres && typeof open !== 'string') {
      options.log(`grown postgres: ${options.rounds} rounds of ${options.steps} steps, empty and grown…`);
      json.lone.postgres = await lonePostgres(open, postgres.url, options);
    }
    const common = throughputOptions(options.windowMs);
    if (grownPath !== null) {
      options.log(
        `grown throughput sqlite: ${options.throughputRounds} rounds of ${THROUGHPUT_RUNS} runs, empty and grown…`,
      );
      json.throughput['sqlite FULL, 1 worker'] = await grownThroughputSqlite(grownPath, common, options);
    }
    if (postgres && typeof open !== 'string') {
      options.log(
        `grown throughput postgres: ${options.throughputRounds} rounds of ${THROUGHPUT_RUNS} runs over ` +
          `${POSTGRES_WORKERS} workers, empty and grown…`,
      );
      json.throughput[`postgres, ${POSTGRES_WORKERS} workers`] = await grownThroughputPostgres(
        open,
        postgres.url,
        common,
        options,
      );
    }
  } finally {
    await postgres?.drop();
  }
  return { json, text: grownText(json, options), skipped };
}

/** Runs `rounds` of each in the order given, after one discarded round of each (round -1). */
async function interleave<K extends string>(
  rounds: number,
  each: Record<K, (round: number) => Promise<number>>,
): Promise<Record<K, number[]>> {
  const order = Object.keys(each) as K[];
  for (const what of order) await each[what](-1);
  const samples = Object.fromEntries(order.map((what) => [what, [] as number[]])) as unknown as Record<K, number[]>;
  for (let i = 0; i < rounds; i++) for (const what of order) samples[what].push(await each[what](i));
  return samples;
}

function pair(empty: number[], grown: number[]): Pair {
  const ratios = grown.map((g, i) => round(g / empty[i]!, 3));
  return { empty: round(median(empty), 1), grown: round(median(grown), 1), ratio: round(median(ratios), 3), ratios };
}

function medians(samples: Record<string, number[]>): Record<string, number> {
  return Object.fromEntries(Object.entries(samples).map(([name, values]) => [name, round(median(values), 2)]));
}

async function loneSqlite(synchronous: Synchronous, grownPath: string, options: GrownOptions): Promise<LoneFigure> {
  const items = inputs(options.steps);
  const emptyPath = join(options.dir, `lone-empty-${synchronous}.db`);
  const stores = {
    empty: openSqliteStore({ path: emptyPath, synchronous }),
    grown: openSqliteStore({ path: grownPath, synchronous }),
  };
  const floors = {
    empty: await openSqliteFloor(emptyPath, synchronous),
    grown: await openSqliteFloor(grownPath, synchronous),
  };
  const name = (kind: 'product' | 'one-commit-floor', side: string, round: number, pass?: 'count') =>
    `${runName(kind, round, pass)}-${synchronous}-${side}`;
  try {
    const perStep = { empty: {} as Record<string, number[]>, grown: {} as Record<string, number[]> };
    /**
     * A timed round, with the CPU it cost a step: better-sqlite3 runs in this process, so that is all of a step's
     * CPU, and far steadier than the wall clock on a shared machine.
     */
    const product = (side: 'empty' | 'grown') => async (round: number) => {
      const cpu = process.cpuUsage();
      const us = await timeRound(options.steps, () =>
        productRound(SOURCES, stores[side], name('product', side, round), items),
      );
      const { user, system } = process.cpuUsage(cpu);
      if (round >= 0) (perStep[side].cpuUs ??= []).push((user + system) / options.steps);
      return us;
    };
    const s = await interleave(options.rounds, {
      empty: product('empty'),
      grown: product('grown'),
      floorEmpty: (round) =>
        timeRound(options.steps, () => floors.empty.runOneCommit(name('one-commit-floor', 'empty', round), items)),
      floorGrown: (round) =>
        timeRound(options.steps, () => floors.grown.runOneCommit(name('one-commit-floor', 'grown', round), items)),
    });
    // What the product appended to the WAL a step, untimed, checkpoints held off (bench/wal.ts), as many rounds.
    for (let round = 0; round < options.rounds; round++) {
      for (const side of ['empty', 'grown'] as const) {
        const meter = walMeter(side === 'empty' ? emptyPath : grownPath);
        try {
          meter.begin({ empty: true });
          await productRound(SOURCES, stores[side], name('product', side, round, 'count'), items);
          const { pages, commits } = meter.end();
          (perStep[side].walPages ??= []).push(pages / options.steps);
          (perStep[side].commits ??= []).push(commits / options.steps);
        } finally {
          meter.close();
        }
      }
    }
    return {
      product: pair(s.empty, s.grown),
      oneCommitFloor: pair(s.floorEmpty, s.floorGrown),
      perStep: { empty: medians(perStep.empty), grown: medians(perStep.grown) },
    };
  } finally {
    floors.empty.close();
    floors.grown.close();
    await stores.empty.close();
    await stores.grown.close();
  }
}

type Open = Exclude<Awaited<ReturnType<typeof loadBackend>>, string>;

async function lonePostgres(open: Open, url: string, options: GrownOptions): Promise<LoneFigure> {
  const items = inputs(options.steps);
  const tag = `wb_grown_${process.pid}`;
  const schemas = { empty: 'waybill_empty', grown: GROWN_SCHEMA };
  const apps = {
    empty: `${tag}_empty`,
    grown: `${tag}_grown`,
    floorEmpty: `${tag}_floor_empty`,
    floorGrown: `${tag}_floor_grown`,
  };
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  const opened: { close(): Promise<void> }[] = [];
  try {
    const stores: Record<'empty' | 'grown', Store> = {
      empty: await open({ url: withApplicationName(url, apps.empty), schema: schemas.empty }),
      grown: await open({ url: withApplicationName(url, apps.grown), schema: schemas.grown }),
    };
    opened.push(stores.empty, stores.grown);
    const floors = {
      empty: await openPostgresFloor(withApplicationName(url, apps.floorEmpty), schemas.empty),
      grown: await openPostgresFloor(withApplicationName(url, apps.floorGrown), schemas.grown),
    };
    opened.push(floors.empty, floors.grown);
    const local = await serverIsLocal(admin);
    const perStep = { empty: {} as Record<string, number[]>, grown: {} as Record<string, number[]> };
    /** A timed round, with the product's CPU a step in this process and in its backends (when the server is here). */
    const product = (side: 'empty' | 'grown') => async (round: number) => {
      const before = local ? await backendCpu(admin, apps[side]) : null;
      const client = process.cpuUsage();
      const us = await timeRound(options.steps, () =>
        productRound(SOURCES, stores[side], `${runName('product', round)}-${side}`, items),
      );
      const { user, system } = process.cpuUsage(client);
      if (before && round >= 0) {
        let backend = 0;
        for (const [pid, seconds] of await backendCpu(admin, apps[side])) backend += seconds - (before.get(pid) ?? 0);
        (perStep[side].clientCpuUs ??= []).push((user + system) / options.steps);
        (perStep[side].backendCpuUs ??= []).push((backend * 1e6) / options.steps);
      }
      return us;
    };
    const s = await interleave(options.rounds, {
      empty: product('empty'),
      grown: product('grown'),
      floorEmpty: (round) =>
        timeRound(options.steps, () => floors.empty.runOneCommit(`${runName('one-commit-floor', round)}-empty`, items)),
      floorGrown: (round) =>
        timeRound(options.steps, () => floors.grown.runOneCommit(`${runName('one-commit-floor', round)}-grown`, items)),
    });
    const withTotal = (m: Record<string, number>) =>
      m.clientCpuUs === undefined ? m : { ...m, totalCpuUs: round(m.clientCpuUs + m.backendCpuUs!, 2) };
    return {
      product: pair(s.empty, s.grown),
      oneCommitFloor: pair(s.floorEmpty, s.floorGrown),
      perStep: { empty: withTotal(medians(perStep.empty)), grown: withTotal(medians(perStep.grown)) },
    };
  } finally {
    for (const handle of opened.reverse()) await handle.close().catch(() => {});
    await admin.query(`DROP SCHEMA IF EXISTS ${schemas.empty} CASCADE`).catch(() => {});
    await admin.end();
  }
}

function grownText(json: GrownSection, options: GrownOptions): string {
  const met = (ratio: number) => (ratio <= GROWN_GOAL ? 'yes' : 'NO');
  const lone = Object.entries(json.lone).map(([label, f]) => [
    label,
    f.product.empty.toFixed(1),
    f.product.grown.toFixed(1),
    f.product.ratio.toFixed(3),
    met(f.product.ratio),
    f.oneCommitFloor.empty.toFixed(1),
    f.oneCommitFloor.grown.toFixed(1),
    f.oneCommitFloor.ratio.toFixed(3),
    `${Math.min(...f.product.ratios).toFixed(2)}–${Math.max(...f.product.ratios).toFixed(2)}`,
  ]);
  const throughput = Object.entries(json.throughput).map(([label, f]) => [
    label,
    String(f.stepsPerSec.empty),
    String(f.stepsPerSec.grown),
    f.ratio.toFixed(3),
    met(f.ratio),
    `${Math.min(...f.ratios).toFixed(2)}–${Math.max(...f.ratios).toFixed(2)}`,
  ]);
  const perStep: string[][] = [];
  for (const [section, figures] of [
    ['lone', json.lone],
    ['64 runs', json.throughput],
  ] as const) {
    for (const [label, f] of Object.entries(figures)) {
      for (const name of Object.keys(f.perStep.grown)) {
        const cell = (v: number | null | undefined) => (v === null || v === undefined ? '?' : v.toFixed(2));
        perStep.push([`${section} ${label}`, name, cell(f.perStep.empty[name]), cell(f.perStep.grown[name])]);
      }
    }
  }
  return [
    `grown store: ${json.seed.committed.toLocaleString('en')} committed steps over ${json.seed.runs.toLocaleString('en')} ` +
      `runs (seed-demo --runs ${json.seed.runs} --steps ${json.seed.steps}) beside an empty store; cost ratio = grown/empty, ` +
      `median of the interleaved rounds' ratios; goal ≤ ${GROWN_GOAL}`,
    `lone run: runAgent, ${options.steps} steps, ${options.rounds} rounds, µs/step; floor = the bare one-commit protocol on the same two stores`,
    ...grid(
      ['backend', 'empty', 'grown', 'ratio', 'met', 'floor empty', 'floor grown', 'floor ratio', 'round ratios'],
      lone,
    ),
    `64 runs: ${options.throughputRounds} rounds of a ${options.windowMs / 1000} s window on each, steps/s; ratio = empty/grown steps/s`,
    ...grid(['backend', 'empty', 'grown', 'ratio', 'met', 'round ratios'], throughput),
    "what a committed step spent (lone: the product's untimed WAL counting rounds, or its CPU in the timed ones; " +
      '64 runs: the windows), medians',
    ...grid(['figure', 'per step', 'empty', 'grown'], perStep),
  ].join('\n');
}

function grid(head: string[], body: string[][]): string[] {
  if (body.length === 0) return [];
  const widths = head.map((h, c) => Math.max(h.length, ...body.map((line) => line[c]!.length)));
  const format = (cells: string[]) =>
    cells
      .map((cell, c) =>
        c <= 1 && head[1] === 'per step'
          ? cell.padEnd(widths[c]!)
          : c === 0
            ? cell.padEnd(widths[c]!)
            : cell.padStart(widths[c]!),
      )
      .join('  ');
  return [format(head), ...body.map(format)].map((line) => `  ${line}`);
}

function round(value: number, digits: number): number {
  const f = 10 ** digits;
  return Math.round(value * f) / f;
}
