/**
 * `seedDemo` on SQLite: one prepared statement per table, run in a loop inside BEGIN IMMEDIATE, a batch of
 * runs per transaction. Between batches the event loop gets a turn (the progress bar redraws) and other
 * writers get the lock, so a seed of a million rows never holds the store for its whole length.
 */
import type Database from 'better-sqlite3';
import { ConflictError } from '../../errors';
import {
  CLAIM_COLUMNS,
  COMMITTED_COLUMNS,
  EVENT_COLUMNS,
  PROGRESS_COLUMNS,
  RUN_COLUMNS,
  type SeedBatch,
  type SeedOptions,
  type SeedReport,
  seedBatches,
  seedPlan,
  seedRunIds,
  seedWorkers,
} from './plan';

const placeholders = (columns: string) =>
  columns
    .split(',')
    .map(() => '?')
    .join(', ');
const insert = (table: string, columns: string) =>
  `INSERT INTO ${table} (${columns}) VALUES (${placeholders(columns)})`;

export async function seedSqlite(
  db: Database.Database,
  options: SeedOptions,
  now: number,
  onProgress?: (done: number, total: number) => void,
): Promise<SeedReport> {
  const plan = seedPlan(options);
  const taken = db
    .prepare<string[], { id: string }>(
      `SELECT id FROM runs WHERE id IN (${seedRunIds(options)
        .map(() => '?')
        .join(', ')})`,
    )
    .get(...seedRunIds(options));
  if (taken) throw new ConflictError(`run ${taken.id} (seeded before: choose another --prefix)`);
  const s = {
    run: db.prepare(insert('runs', RUN_COLUMNS)),
    progress: db.prepare(insert('progress', PROGRESS_COLUMNS)),
    committed: db.prepare(insert('committed', COMMITTED_COLUMNS)),
    event: db.prepare(insert('step_events', EVENT_COLUMNS)),
    claim: db.prepare(insert('claims', CLAIM_COLUMNS)),
    worker: db.prepare(`INSERT INTO workers (id, host, pid, started_at, heartbeat_at) VALUES (?, ?, ?, ?, ?)
      ON CONFLICT (id) DO NOTHING`),
  };
  const write = db.transaction((batch: SeedBatch) => {
    for (const row of batch.runs) s.run.run(...row);
    for (const row of batch.progress) s.progress.run(...row);
    for (const row of batch.committed) s.committed.run(...row);
    for (const row of batch.events) s.event.run(...row);
    for (const row of batch.claims) s.claim.run(...row);
  }).immediate;
  db.transaction(() => {
    for (const row of seedWorkers(options, now)) s.worker.run(...row);
  }).immediate();
  let done = 0;
  onProgress?.(0, plan.committed);
  for (const batch of seedBatches(options, now)) {
    write(batch);
    done += batch.committed.length;
    onProgress?.(done, plan.committed);
    await new Promise((resolve) => setImmediate(resolve));
  }
  return plan;
}
