/**
 * `seedDemo` on PostgreSQL: each table's rows of a batch go in one INSERT … SELECT FROM unnest(arrays), one
 * array parameter per column, so a batch of twenty thousand rows is one round trip and one statement to
 * plan instead of twenty thousand. A batch is one transaction, as on SQLite.
 */
import type pg from 'pg';
import { ConflictError } from '../../errors';
import {
  CLAIM_COLUMNS,
  COMMITTED_COLUMNS,
  EVENT_COLUMNS,
  PROGRESS_COLUMNS,
  RUN_COLUMNS,
  type SeedOptions,
  type SeedReport,
  seedBatches,
  seedPlan,
  seedRunIds,
  seedWorkers,
} from './plan';

const TYPES = {
  runs: [
    'text',
    'text',
    'text',
    'text',
    'int',
    'text',
    'float8',
    'int',
    'text',
    'float8',
    'float8',
    'float8',
    'float8',
  ],
  progress: ['text', 'int', 'text', 'float8', 'int', 'int', 'int', 'float8'],
  committed: ['text', 'text', 'text', 'float8', 'int', 'text', 'float8'],
  step_events: ['text', 'text', 'int', 'text', 'int', 'float8', 'text', 'text', 'float8'],
  claims: ['text', 'text', 'float8', 'text', 'text', 'float8', 'float8', 'int', 'int'],
} as const;

const COLUMNS = {
  runs: RUN_COLUMNS,
  progress: PROGRESS_COLUMNS,
  committed: COMMITTED_COLUMNS,
  step_events: EVENT_COLUMNS,
  claims: CLAIM_COLUMNS,
};

/** Rows (tuples) to one array per column, and the statement that unnests them. */
async function insertRows(client: pg.PoolClient, table: keyof typeof TYPES, rows: unknown[][]): Promise<void> {
  if (rows.length === 0) return;
  const types = TYPES[table];
  const columns = types.map((_, c) => rows.map((row) => row[c]));
  await client.query(
    `INSERT INTO ${table} (${COLUMNS[table]})
    SELECT * FROM unnest(${types.map((type, c) => `$${c + 1}::${type}[]`).join(', ')})`,
    columns,
  );
}

export async function seedPostgres(
  pool: pg.Pool,
  options: SeedOptions,
  skew: number,
  onProgress?: (done: number, total: number) => void,
): Promise<SeedReport> {
  const plan = seedPlan(options);
  const taken = await pool.query<{ id: string }>('SELECT id FROM runs WHERE id = ANY($1::text[]) LIMIT 1', [
    seedRunIds(options),
  ]);
  if (taken.rows[0]) throw new ConflictError(`run ${taken.rows[0].id} (seeded before: choose another --prefix)`);
  const now = (
    await pool.query<{ now: number }>('SELECT extract(epoch from now())::float8 + $1::float8 AS now', [skew])
  ).rows[0]!.now;
  const client = await pool.connect();
  try {
    for (const [id, host, pid, started, heartbeat] of seedWorkers(options, now)) {
      await client.query(
        `INSERT INTO workers (id, host, pid, started_at, heartbeat_at) VALUES ($1, $2, $3, $4, $5)
        ON CONFLICT (id) DO NOTHING`,
        [id, host, pid, started, heartbeat],
      );
    }
    let done = 0;
    onProgress?.(0, plan.committed);
    for (const batch of seedBatches(options, now)) {
      await client.query('BEGIN');
      try {
        await insertRows(client, 'runs', batch.runs);
        await insertRows(client, 'progress', batch.progress);
        await insertRows(client, 'committed', batch.committed);
        await insertRows(client, 'step_events', batch.events);
        await insertRows(client, 'claims', batch.claims);
        await client.query('COMMIT');
      } catch (error) {
        await client.query('ROLLBACK').catch(() => undefined);
        throw error;
      }
      done += batch.committed.length;
      onProgress?.(done, plan.committed);
    }
  } finally {
    client.release();
  }
  // A bulk load leaves the planner's statistics and the visibility map behind: until autovacuum comes by,
  // counts over an index read the heap (a run's count: 300 ms instead of 30) and plans guess row counts.
  await pool.query('VACUUM (ANALYZE) runs, progress, committed, step_events, claims, workers');
  return plan;
}
