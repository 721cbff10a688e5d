/**
 * SQLite: the product (runAgent over the store openStore opens, bench/product.ts) against its floors, the
 * bare protocol driven with raw better-sqlite3 prepared statements on a file with the same schema and the same
 * pragmas: in two commits a step (the article's), and in one (the next step's claim riding in the commit, as the
 * product does it).
 *
 * What a step appends to the WAL (bench/wal.ts: pages and commits a step) is counted apart, untimed: after the
 * timed rounds, the same number of counting rounds, interleaved alike, each on an emptied WAL that no checkpoint
 * touches until it ends. The timed rounds are left as they were, checkpoints and all; the pages a step appends
 * are the same whether or not a checkpoint runs between steps.
 */
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { stepKey } from '../lib/checkpoint';
import { openSqliteStore } from '../lib/store/sqlite';
import type { Product } from './product';
import { interleave, keep, type PerStepSamples, perStepSamples, type Samples, timeRound } from './stats';
import { type WalMeter, walMeter } from './wal';
import { inputs, productRound, runName, sideEffect } from './workload';

export type Synchronous = 'full' | 'normal';

export interface SqliteBenchOptions {
  steps: number;
  rounds: number;
  /** A temporary directory the caller removes. */
  dir: string;
  product: Product;
}

export async function benchSqlite(
  synchronous: Synchronous,
  options: SqliteBenchOptions,
): Promise<Samples & { perStep: PerStepSamples; perStepFrom: string }> {
  const items = inputs(options.steps);
  const productPath = join(options.dir, `product-${synchronous}.db`);
  const floorPath = join(options.dir, `floor-${synchronous}.db`);
  const { product } = options;
  const store = await product.openStore(`file:${productPath}`, { synchronous });
  try {
    const floor = await openFloor(floorPath, synchronous);
    try {
      const samples = await interleave(options.rounds, {
        floor: (round) => timeRound(options.steps, () => floor.run(runName('floor', round), items)),
        oneCommitFloor: (round) =>
          timeRound(options.steps, () => floor.runOneCommit(runName('one-commit-floor', round), items)),
        product: (round) =>
          timeRound(options.steps, () => productRound(product, store, runName('product', round), items)),
      });
      const perStep = await countWal(options, synchronous, {
        floor: [floorPath, (round) => floor.run(runName('floor', round, 'count'), items)],
        oneCommitFloor: [floorPath, (round) => floor.runOneCommit(runName('one-commit-floor', round, 'count'), items)],
        product: [productPath, (round) => productRound(product, store, runName('product', round, 'count'), items)],
      });
      return {
        ...samples,
        perStep,
        perStepFrom: `${options.rounds} untimed counting rounds of ${options.steps} steps after the timed ones, checkpoints held off`,
      };
    } finally {
      floor.close();
    }
  } finally {
    await store.close();
  }
}

/**
 * The counting pass: `rounds` rounds of each, interleaved in the timed rounds' order, none timed. Each starts on
 * a WAL emptied by a TRUNCATE checkpoint and holds checkpoints off (bench/wal.ts) until it has counted.
 */
async function countWal(
  options: SqliteBenchOptions,
  synchronous: Synchronous,
  each: Record<keyof Samples, [path: string, body: (round: number) => unknown]>,
): Promise<PerStepSamples> {
  const perStep = perStepSamples();
  const meters = new Map<string, WalMeter>();
  try {
    for (const [path] of Object.values(each)) if (!meters.has(path)) meters.set(path, walMeter(path));
    for (let round = 0; round < options.rounds; round++) {
      for (const what of ['floor', 'oneCommitFloor', 'product'] as const) {
        const [path, body] = each[what];
        const wal = meters.get(path)!;
        wal.begin({ empty: true });
        await body(round);
        const { pages, commits } = wal.end();
        keep(perStep, what, round, {
          walPages: pages / options.steps,
          commits: commits / options.steps,
          // The WAL's sync at commit: FULL syncs each commit, NORMAL only at checkpoints (not counted here).
          fsyncs: synchronous === 'full' ? commits / options.steps : 0,
        });
      }
    }
    return perStep;
  } finally {
    for (const meter of meters.values()) meter.close();
  }
}

/**
 * The article's protocol and nothing more, per step: (1) BEGIN IMMEDIATE, look the key up in committed,
 * insert the claim (the article's columns), COMMIT; the side effect; (2) BEGIN IMMEDIATE, insert the
 * result, delete the claim, upsert progress, COMMIT. In one commit a step, (1) is done once for the first
 * step and then for each next step inside (2), after the upsert. The file is created by openSqliteStore, so
 * tables and indexes are the product's, then reopened bare with the same pragmas.
 */
export async function openFloor(path: string, synchronous: Synchronous) {
  await openSqliteStore({ path, synchronous }).close();
  const db = new Database(path, { timeout: 5000 });
  db.pragma('journal_mode = WAL');
  db.pragma(`synchronous = ${synchronous === 'normal' ? 'NORMAL' : 'FULL'}`);
  const begin = db.prepare('BEGIN IMMEDIATE');
  const commit = db.prepare('COMMIT');
  const lookup = db.prepare<[string], { result_json: string }>('SELECT result_json FROM committed WHERE idem_key = ?');
  const claim = db.prepare('INSERT INTO claims (idem_key, run_id, claimed_at) VALUES (?, ?, ?)');
  const insertResult = db.prepare(
    'INSERT INTO committed (idem_key, run_id, result_json, committed_at) VALUES (?, ?, ?, ?)',
  );
  const release = db.prepare('DELETE FROM claims WHERE idem_key = ?');
  const progress = db.prepare(`INSERT INTO progress (run_id, step, state_json, updated_at) VALUES (?, ?, ?, ?)
    ON CONFLICT (run_id) DO UPDATE SET step = excluded.step, state_json = excluded.state_json, updated_at = excluded.updated_at`);

  const transaction = (body: () => void) => {
    begin.run();
    try {
      body();
      commit.run();
    } catch (error) {
      if (db.inTransaction) db.exec('ROLLBACK');
      throw error;
    }
  };

  /** (1): the key looked up in committed and claimed unless it is there; its committed result if it is. */
  const claimUnlessDone = (key: string, runId: string) => {
    const done = lookup.get(key);
    if (!done) claim.run(key, runId, Date.now() / 1000);
    return done;
  };

  return {
    runOneCommit(runId: string, items: readonly number[]): void {
      let done: { result_json: string } | undefined;
      transaction(() => {
        done = claimUnlessDone(stepKey(runId, 0), runId);
      });
      for (let step = 0; step < items.length; step++) {
        const key = stepKey(runId, step);
        if (done) throw new Error(`floor: ${key} was already committed`);
        const resultJson = JSON.stringify(sideEffect(items[step]!));
        transaction(() => {
          const now = Date.now() / 1000;
          insertResult.run(key, runId, resultJson, now);
          release.run(key);
          progress.run(runId, step + 1, JSON.stringify({ processed: step + 1 }), now);
          if (step + 1 < items.length) done = claimUnlessDone(stepKey(runId, step + 1), runId);
        });
      }
    },
    run(runId: string, items: readonly number[]): void {
      for (let step = 0; step < items.length; step++) {
        const key = stepKey(runId, step);
        let done: { result_json: string } | undefined;
        transaction(() => {
          done = claimUnlessDone(key, runId);
        });
        if (done) throw new Error(`floor: ${key} was already committed`);
        const resultJson = JSON.stringify(sideEffect(items[step]!));
        transaction(() => {
          const now = Date.now() / 1000;
          insertResult.run(key, runId, resultJson, now);
          release.run(key);
          progress.run(runId, step + 1, JSON.stringify({ processed: step + 1 }), now);
        });
      }
    },
    close(): void {
      db.close();
    },
  };
}
