/**
 * The 64-run half of `npm run bench -- --only grown` (bench/grown.ts): rounds of one throughput window on each
 * store, as bench/throughput.ts measures one, the empty store first in even rounds and the grown one in odd ones.
 * Each round's runs are its own (`tp-r<N>-<side>-<i>`) and are cancelled when it ends (their claims deleted), so
 * the next round's workers take only theirs; the grown store keeps the rows they committed.
 */
import { join } from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import { openSqliteStore } from '../lib/store/sqlite';
import { GROWN_SCHEMA } from './grown-store';
import type { loadBackend } from './postgres';
import { median } from './stats';
import { POSTGRES_WORKERS } from './throughput';
import { localDataDirectory, postgresProduct } from './throughput-postgres';
import { runIds, type ThroughputOptions } from './throughput-run';
import { sqliteProduct } from './throughput-sqlite';
import type { WindowFigure } from './window';

type Open = Exclude<Awaited<ReturnType<typeof loadBackend>>, string>;

/** What the rounds take of the section's options (bench/grown.ts, GrownOptions). */
interface RoundsOptions {
  /** Rounds: one window on each store a round. */
  throughputRounds: number;
  /** A temporary directory the caller removes (the empty SQLite store goes in it). */
  dir: string;
  log: (line: string) => void;
  onInterrupt: (undo: () => Promise<void>) => void;
}

export interface ThroughputFigure {
  /** Steps a second. */
  stepsPerSec: { empty: number; grown: number };
  /** The cost ratio, empty steps/s over grown steps/s, per round and its median. */
  ratio: number;
  ratios: number[];
  perStep: { empty: Record<string, number | null>; grown: Record<string, number | null> };
}

/** The SQLite rounds: one `waybill worker` at FULL on a new empty file, then on the grown copy, and so on. */
export async function grownThroughputSqlite(
  grownPath: string,
  common: ThroughputOptions,
  options: RoundsOptions,
): Promise<ThroughputFigure> {
  const emptyPath = join(options.dir, 'throughput-empty.db');
  await openSqliteStore({ path: emptyPath, synchronous: 'full' }).close();
  return throughputRounds(options, async (side, prefix) => {
    const path = side === 'empty' ? emptyPath : grownPath;
    try {
      return await sqliteProduct(path, common, prefix);
    } finally {
      cancelSqliteRuns(path, runIds(common, prefix));
    }
  });
}

/**
 * `throughputRounds` rounds of one window on each store, the empty one first in even rounds and the grown one
 * first in odd ones, so that a trend in the machine's load falls on both alike.
 */
async function throughputRounds(
  options: RoundsOptions,
  window: (side: 'empty' | 'grown', prefix: string) => Promise<WindowFigure>,
): Promise<ThroughputFigure> {
  const figures = { empty: [] as WindowFigure[], grown: [] as WindowFigure[] };
  for (let round = 0; round < options.throughputRounds; round++) {
    const order = round % 2 === 0 ? (['empty', 'grown'] as const) : (['grown', 'empty'] as const);
    for (const side of order) {
      const figure = await window(side, `tp-r${round}-${side}`);
      figures[side].push(figure);
      options.log(`  round ${round + 1} ${side}: ${Math.round(figure.stepsPerSec)} steps/s`);
    }
  }
  const rate = (side: 'empty' | 'grown') => figures[side].map((f) => f.stepsPerSec);
  const ratios = rate('empty').map((e, i) => round(e / rate('grown')[i]!, 3));
  const perStep = (side: 'empty' | 'grown') => {
    const names = new Set(figures[side].flatMap((f) => Object.keys(resources(f))));
    return Object.fromEntries(
      [...names].map((name) => {
        const values = figures[side].map((f) => resources(f)[name]).filter((v): v is number => typeof v === 'number');
        return [name, values.length === 0 ? null : round(median(values), 2)];
      }),
    );
  };
  return {
    stepsPerSec: { empty: Math.round(median(rate('empty'))), grown: Math.round(median(rate('grown'))) },
    ratio: round(median(ratios), 3),
    ratios,
    perStep: { empty: perStep('empty'), grown: perStep('grown') },
  };
}

/** A window's limiting resource a step: WAL pages and commits (SQLite), CPU µs of workers and backends. */
function resources(f: WindowFigure): Record<string, number | null> {
  return {
    ...f.countedPerStep,
    workerCpuUs: f.cpuUsPerStep.worker ?? null,
    ...(f.cpuUsPerStep.pg === undefined ? {} : { backendCpuUs: f.cpuUsPerStep.pg }),
    ...(f.roundTripsPerStep === null ? {} : { roundTrips: f.roundTripsPerStep }),
  };
}

/** The PostgreSQL rounds: 4 workers on an empty schema of the grown copy's database, then on the grown one. */
export async function grownThroughputPostgres(
  open: Open,
  url: string,
  common: ThroughputOptions,
  options: RoundsOptions,
): Promise<ThroughputFigure> {
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  const emptySchema = 'waybill_tp_empty';
  try {
    await (await open({ url, schema: emptySchema })).close();
    const dataDir = await localDataDirectory(admin);
    return await throughputRounds(options, async (side, prefix) => {
      const schema = side === 'empty' ? emptySchema : GROWN_SCHEMA;
      try {
        return await postgresProduct({
          open,
          admin,
          url,
          schema,
          tag: `wb_${process.pid}_${prefix.replaceAll('-', '_')}`,
          options: { ...common, url, workers: POSTGRES_WORKERS, onInterrupt: options.onInterrupt },
          dataDir,
          prefix,
        });
      } finally {
        // The workers handed their runs back; cancelled, the next round's workers take only their own.
        await admin.query(
          `UPDATE ${schema}.runs SET status = 'cancelled', owner = NULL, lease_expires_at = NULL
          WHERE id = ANY($1::text[])`,
          [runIds(common, prefix)],
        );
        await admin.query(`DELETE FROM ${schema}.claims WHERE run_id = ANY($1::text[])`, [runIds(common, prefix)]);
      }
    });
  } finally {
    await admin.query(`DROP SCHEMA IF EXISTS ${emptySchema} CASCADE`).catch(() => {});
    await admin.end();
  }
}

/** The round's runs, handed back by its worker, cancelled: the next round's worker takes only its own. */
function cancelSqliteRuns(path: string, ids: string[]): void {
  const db = new Database(path, { timeout: 5000 });
  try {
    const list = ids.map(() => '?').join(', ');
    db.transaction(() => {
      db.prepare(
        `UPDATE runs SET status = 'cancelled', owner = NULL, lease_expires_at = NULL WHERE id IN (${list})`,
      ).run(...ids);
      db.prepare(`DELETE FROM claims WHERE run_id IN (${list})`).run(...ids);
    }).immediate();
  } finally {
    db.close();
  }
}

function round(value: number, digits: number): number {
  const f = 10 ** digits;
  return Math.round(value * f) / f;
}
