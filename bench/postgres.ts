/**
 * PostgreSQL: the product (runAgent over the store openStore opens, bench/product.ts) against its floors, the
 * bare protocol over one pg connection with named prepared statements: in two statements a step (claim, commit),
 * and in one (the next step's claim riding in the commit, as the product does it). All live in throwaway schemas
 * created by the store itself (so tables and indexes are the product's) and dropped afterwards.
 *
 * Each round also reads what it cost in CPU a step: the bench process's own (process.cpuUsage: the client,
 * where the product or the floor runs) and the backends serving it (found in pg_stat_activity by the
 * application_name each side connects with, read from /proc/<pid>/sched). That needs the server on this
 * machine: when it is elsewhere the CPU figures are left out; when it is here, a backend that cannot be read
 * is an error.
 *
 * lib/store/postgres/index.ts is imported dynamically: the SQLite half of the bench must run without it.
 */
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { stepKey } from '../lib/checkpoint';
import type { Store } from '../lib/store/contract';
import { processCommand, processRuntime } from './proc';
import type { Product } from './product';
import { interleave, keep, type PerStepSamples, perStepSamples, type Samples, timeRound } from './stats';
import { inputs, productRound, runName, sideEffect } from './workload';

type OpenPostgresStore = (options: { url: string; schema?: string; poolSize?: number }) => Promise<Store>;

export interface PostgresBenchOptions {
  url: string;
  steps: number;
  rounds: number;
  /** Registers what an interrupted bench must still undo (the throwaway schemas). */
  onInterrupt: (undo: () => Promise<void>) => void;
  product: Product;
}

/** Why the PostgreSQL half did not run. */
export type Skip = { skipped: string };

export async function benchPostgres(
  options: PostgresBenchOptions,
): Promise<(Samples & { perStep: PerStepSamples; perStepFrom?: string }) | Skip> {
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
    const names = { product: `${tag}_product`, floor: `${tag}_floor` };
    const { product } = options;
    const store = await product.openStore(withApplicationName(options.url, names.product), { schema: schemas.product });
    opened.push(store);
    await (await open({ url: options.url, schema: schemas.floor })).close();
    const floor = await openFloor(withApplicationName(options.url, names.floor), schemas.floor);
    opened.push(floor);
    const items = inputs(options.steps);
    const local = await serverIsLocal(admin);
    const perStep = perStepSamples();
    /** One timed round of `what`, with the CPU it cost a step in this process and in the backends named `name`. */
    const metered = (what: keyof Samples, name: string, body: (round: number) => unknown) => async (round: number) => {
      const before = local ? await backendCpu(admin, name) : null;
      const client = process.cpuUsage();
      const us = await timeRound(options.steps, () => body(round));
      const { user, system } = process.cpuUsage(client);
      if (before) {
        // A backend first seen after the round (the pool opened it meanwhile) counts from its start.
        const after = await backendCpu(admin, name);
        if (after.size === 0) throw new Error(`no PostgreSQL backend is connected as ${name} after a round`);
        let backend = 0;
        for (const [pid, seconds] of after) backend += seconds - (before.get(pid) ?? 0);
        const clientCpuUs = (user + system) / options.steps;
        const backendCpuUs = (backend * 1e6) / options.steps;
        // Their total is the sum of the two medians (bench/stats.ts), not a median of its own.
        keep(perStep, what, round, { clientCpuUs, backendCpuUs });
      }
      return us;
    };
    const samples = await interleave(options.rounds, {
      floor: metered('floor', names.floor, (round) => floor.run(runName('floor', round), items)),
      oneCommitFloor: metered('oneCommitFloor', names.floor, (round) =>
        floor.runOneCommit(runName('one-commit-floor', round), items),
      ),
      product: metered('product', names.product, (round) =>
        productRound(product, store, runName('product', round), items),
      ),
    });
    return { ...samples, perStep, ...(local ? { perStepFrom: 'the timed rounds, /proc read between them' } : {}) };
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
export async function openFloor(url: string, schema: string) {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  await client.query(`SET search_path TO ${schema}`);
  await withoutStoreTriggers(client);
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

/** withoutStoreTriggers as a connection's startup option, for floors that connect many clients. */
export const FLOOR_STARTUP_OPTION = '-c session_replication_role=replica';

/**
 * A floor writes the product's tables, whose triggers keep the product's own bookkeeping (the committed count,
 * functions/committed-count.ts): an insert the product makes is counted in its own statement and passes them by,
 * a floor's would fire them and pay for a count that is no part of the bare protocol. In the replica role no
 * ordinary trigger fires. It takes a superuser, as the test database's default role is; without one the floor
 * would measure the triggers, so the bench stops and says so.
 */
export async function withoutStoreTriggers(client: pg.Client): Promise<void> {
  try {
    await client.query('SET session_replication_role = replica');
  } catch (error) {
    throw new Error(
      "the PostgreSQL floors must not fire the store's triggers, and SET session_replication_role was refused " +
        `(${(error as Error).message}): run the bench as a superuser (TEST_DATABASE_URL)`,
    );
  }
}

export function withApplicationName(url: string, name: string): string {
  const parsed = new URL(url);
  parsed.searchParams.set('application_name', name);
  return parsed.toString();
}

/** Whether the server's backends are processes of this machine: the admin connection's is a `postgres` here. */
export async function serverIsLocal(admin: pg.Client): Promise<boolean> {
  const { rows } = await admin.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
  return processCommand(rows[0]!.pid) === 'postgres';
}

/** CPU seconds so far of each backend connected as `name`; throws if one cannot be read. */
export async function backendCpu(admin: pg.Client, name: string): Promise<Map<number, number>> {
  const { rows } = await admin.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE application_name = $1', [
    name,
  ]);
  const cpu = new Map<number, number>();
  for (const { pid } of rows) {
    const seconds = processRuntime(pid);
    if (seconds === null) {
      throw new Error(
        `PostgreSQL backend ${pid} (${name}) has no readable /proc/${pid}: the server runs on this machine, ` +
          'so the bench must be able to read its backends (same pid namespace, /proc not hidden)',
      );
    }
    cpu.set(pid, seconds);
  }
  return cpu;
}

function redact(url: string): string {
  return url.replace(/\/\/([^:@/]*):[^@/]*@/, '//$1:***@');
}
