/**
 * PostgreSQL: the product (runAgent over openPostgresStore) against its floors, the bare protocol over one pg
 * connection with named prepared statements: in two statements a step (claim, commit), and in one (the next
 * step's claim riding in the commit, as the product does it). All live in throwaway schemas created by the
 * store itself (so tables and indexes are the product's) and dropped afterwards.
 *
 * lib/store/postgres/index.ts is imported dynamically: the SQLite half of the bench must run without it.
 */
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { stepKey } from '../lib/checkpoint';
import type { Store } from '../lib/store/contract';
import { interleave, type Samples, timeRound } from './stats';
import { inputs, productRound, runName, sideEffect } from './workload';

type OpenPostgresStore = (options: { url: string; schema?: string; poolSize?: number }) => Promise<Store>;

export interface PostgresBenchOptions {
  url: string;
  steps: number;
  rounds: number;
  /** Registers what an interrupted bench must still undo (the throwaway schemas). */
  onInterrupt: (undo: () => Promise<void>) => void;
}

/** Why the PostgreSQL half did not run. */
export type Skip = { skipped: string };

export async function benchPostgres(options: PostgresBenchOptions): Promise<Samples | Skip> {
  const open = await loadBackend();
  if (typeof open === 'string') return { skipped: open };
  const admin = new pg.Client({ connectionString: options.url, connectionTimeoutMillis: 3000 });
  try {
    await admin.connect();
  } catch (error) {
    return { skipped: `PostgreSQL is unreachable at ${redact(options.url)}: ${(error as Error).message}` };
  }

  const tag = `waybill_bench_${process.pid}_${randomBytes(3).toString('hex')}`;
  const schemas = { product: `${tag}_product`, floor: `${tag}_floor` };
  const opened: { close(): Promise<void> }[] = [];
  const dropSchemas = async () => {
    for (const schema of Object.values(schemas)) await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  };
  options.onInterrupt(dropSchemas);
  try {
    const store = await open({ url: options.url, schema: schemas.product });
    opened.push(store);
    await (await open({ url: options.url, schema: schemas.floor })).close();
    const floor = await openFloor(options.url, schemas.floor);
    opened.push(floor);
    const items = inputs(options.steps);
    return await interleave(options.rounds, {
      floor: (round) => timeRound(options.steps, () => floor.run(runName('floor', round), items)),
      oneCommitFloor: (round) =>
        timeRound(options.steps, () => floor.runOneCommit(runName('one-commit-floor', round), items)),
      product: (round) => timeRound(options.steps, () => productRound(store, runName('product', round), items)),
    });
  } finally {
    for (const handle of opened.reverse()) await handle.close().catch(() => {});
    await dropSchemas();
    await admin.end();
  }
}

/** The store's opener, or the reason there is none. */
export async function loadBackend(): Promise<OpenPostgresStore | string> {
  const url = new URL('../lib/store/postgres/index.ts', import.meta.url);
  if (!existsSync(fileURLToPath(url))) return 'lib/store/postgres/index.ts does not exist yet';
  try {
    const module = (await import(url.href)) as { openPostgresStore?: unknown };
    if (typeof module.openPostgresStore !== 'function')
      return 'lib/store/postgres/index.ts exports no openPostgresStore';
    return module.openPostgresStore as OpenPostgresStore;
  } catch (error) {
    return `lib/store/postgres/index.ts failed to load: ${(error as Error).message}`;
  }
}

/**
 * Per step, two autocommitted statements: (1) insert the claim (the article's columns) unless the key is
 * committed, returning the committed result if it is; the side effect; (2) delete the claim, insert the
 * result and upsert progress in one statement. In one statement a step, (1) runs once for the first step,
 * and (2) then also claims the next step unless it is committed. Times come from the database clock, as in
 * the store.
 */
async function openFloor(url: string, schema: string) {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  await client.query(`SET search_path TO ${schema}`);
  const claim = `WITH done AS (SELECT result_json FROM committed WHERE idem_key = $1::text),
    claimed AS (
      INSERT INTO claims (idem_key, run_id, claimed_at)
      SELECT $1::text, $2::text, extract(epoch FROM now()) WHERE NOT EXISTS (SELECT 1 FROM done)
      RETURNING idem_key)
    SELECT (SELECT result_json FROM done) AS result_json, EXISTS (SELECT 1 FROM claimed) AS claimed`;
  const commit = `WITH released AS (DELETE FROM claims WHERE idem_key = $1::text RETURNING idem_key),
    stored AS (
      INSERT INTO committed (idem_key, run_id, result_json, committed_at)
      SELECT idem_key, $2::text, $3::text, extract(epoch FROM now()) FROM released
      RETURNING idem_key)
    INSERT INTO progress (run_id, step, state_json, updated_at)
    SELECT $2::text, $4::integer, $5::text, extract(epoch FROM now()) FROM stored
    ON CONFLICT (run_id) DO UPDATE SET step = excluded.step, state_json = excluded.state_json,
      updated_at = excluded.updated_at`;

  // (2) and the next step's (1): the progress upsert's row is what the claim's insert hangs on, so nothing is
  // claimed unless the commit happened.
  const commitAndClaim = `WITH released AS (DELETE FROM claims WHERE idem_key = $1::text RETURNING idem_key),
    stored AS (
      INSERT INTO committed (idem_key, run_id, result_json, committed_at)
      SELECT idem_key, $2::text, $3::text, extract(epoch FROM now()) FROM released
      RETURNING idem_key),
    progressed AS (
      INSERT INTO progress (run_id, step, state_json, updated_at)
      SELECT $2::text, $4::integer, $5::text, extract(epoch FROM now()) FROM stored
      ON CONFLICT (run_id) DO UPDATE SET step = excluded.step, state_json = excluded.state_json,
        updated_at = excluded.updated_at
      RETURNING run_id),
    claimed AS (
      INSERT INTO claims (idem_key, run_id, claimed_at)
      SELECT $6::text, $2::text, extract(epoch FROM now()) FROM progressed
      WHERE $6::text IS NOT NULL AND NOT EXISTS (SELECT 1 FROM committed WHERE idem_key = $6::text)
      RETURNING idem_key)
    SELECT (SELECT count(*) FROM stored)::int AS stored, (SELECT count(*) FROM claimed)::int AS claimed`;

  return {
    async runOneCommit(runId: string, items: readonly number[]): Promise<void> {
      const first = await client.query<{ claimed: boolean }>({
        name: 'waybill-bench-claim',
        text: claim,
        values: [stepKey(runId, 0), runId],
      });
      if (!first.rows[0]?.claimed) throw new Error(`floor: ${stepKey(runId, 0)} was not claimed`);
      for (let step = 0; step < items.length; step++) {
        const key = stepKey(runId, step);
        const next = step + 1 < items.length ? stepKey(runId, step + 1) : null;
        const resultJson = JSON.stringify(sideEffect(items[step]!));
        const { rows } = await client.query<{ stored: number; claimed: number }>({
          name: 'waybill-bench-commit-and-claim',
          text: commitAndClaim,
          values: [key, runId, resultJson, step + 1, JSON.stringify({ processed: step + 1 }), next],
        });
        if (rows[0]?.stored !== 1) throw new Error(`floor: ${key} was not committed`);
        if (next !== null && rows[0]?.claimed !== 1) throw new Error(`floor: ${next} was not claimed`);
      }
    },
    async run(runId: string, items: readonly number[]): Promise<void> {
      for (let step = 0; step < items.length; step++) {
        const key = stepKey(runId, step);
        const claimed = await client.query<{ result_json: string | null; claimed: boolean }>({
          name: 'waybill-bench-claim',
          text: claim,
          values: [key, runId],
        });
        if (!claimed.rows[0]?.claimed) throw new Error(`floor: ${key} was not claimed`);
        const resultJson = JSON.stringify(sideEffect(items[step]!));
        const committed = await client.query({
          name: 'waybill-bench-commit',
          text: commit,
          values: [key, runId, resultJson, step + 1, JSON.stringify({ processed: step + 1 })],
        });
        if (committed.rowCount !== 1) throw new Error(`floor: ${key} was not committed`);
      }
    },
    close: () => client.end(),
  };
}

function redact(url: string): string {
  return url.replace(/\/\/([^:@/]*):[^@/]*@/, '//$1:***@');
}
