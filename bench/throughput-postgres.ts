/**
 * PostgreSQL throughput: 64 runs of zero-cost steps over 4 `waybill worker --concurrency 16` processes on one
 * schema, beside its floor, measured in the same run: 64 loops over 64 bare node-postgres clients in one
 * process, each step one INSERT of a committed row (its own transaction). Both in throwaway schemas the store
 * creates (the product's tables and indexes), dropped afterwards.
 *
 * The workers load bench/round-trips.mjs, which counts their queries, so the figure says how many round trips
 * a step costs. Each process's connections carry their own application_name, which is how their backends'
 * CPU is found (pg_stat_activity's pid, then /proc, when the server is on this machine).
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { stepKey } from '../lib/checkpoint';
import { FLOOR_STARTUP_OPTION, loadBackend, type Skip } from './postgres';
import { processCommand } from './proc';
import { queueRuns, runIds, type Throughput, type ThroughputOptions, untilAllRunning } from './throughput-run';
import { measureWindow, type WindowFigure } from './window';
import { spawnWorker, type WorkerProcess } from './workers';

export interface PostgresThroughputOptions extends ThroughputOptions {
  url: string;
  workers: number;
  onInterrupt: (undo: () => Promise<void>) => void;
}

export async function throughputPostgres(options: PostgresThroughputOptions): Promise<Throughput | Skip> {
  if (options.runs % options.workers !== 0)
    throw new Error(`${options.runs} runs do not split over ${options.workers} workers`);
  const open = await loadBackend();
  if (typeof open === 'string') return { skipped: open };
  const admin = new pg.Client({ connectionString: options.url, connectionTimeoutMillis: 3000 });
  try {
    await admin.connect();
  } catch (error) {
    return { skipped: `PostgreSQL is unreachable: ${(error as Error).message}` };
  }
  const tag = `waybill_tp_${process.pid}_${randomBytes(3).toString('hex')}`;
  const schemas = { product: `${tag}_product`, floor: `${tag}_floor` };
  const dropSchemas = async () => {
    for (const schema of Object.values(schemas)) await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  };
  options.onInterrupt(dropSchemas);
  try {
    const dataDir = await localDataDirectory(admin);
    const backends = (applicationName: string) => backendPids(admin, applicationName);

    await (await open({ url: options.url, schema: schemas.floor })).close();
    const floor = await postgresFloor({ ...options, schema: schemas.floor, tag, admin, dataDir, backends });

    const product = await postgresProduct({
      open,
      admin,
      url: options.url,
      schema: schemas.product,
      tag,
      options,
      dataDir,
    });
    return { product, floor };
  } finally {
    await dropSchemas().catch(() => {});
    await admin.end();
  }
}

/**
 * The product's window: `options.runs` runs (`${prefix}-0`…) over `options.workers` worker processes on the store
 * in `schema` at `url`, which may hold other rows (bench/grown.ts): only its own runs' rows are counted, so the
 * store's size is not in the count's cost. `admin` is connected to the same database.
 */
export async function postgresProduct(p: {
  open: Exclude<Awaited<ReturnType<typeof loadBackend>>, string>;
  admin: pg.Client;
  url: string;
  schema: string;
  /** Names the workers' connections (application_name) and processes. */
  tag: string;
  options: PostgresThroughputOptions;
  dataDir: string | undefined;
  prefix?: string;
}): Promise<WindowFigure> {
  const { admin, options, schema } = p;
  const store = await p.open({ url: p.url, schema });
  try {
    await queueRuns(store, options, p.prefix);
  } finally {
    await store.close();
  }
  const ids = runIds(options, p.prefix);
  const workers: WorkerProcess[] = [];
  const names = Array.from({ length: options.workers }, (_, i) => `${p.tag}_w${i}`);
  try {
    for (const name of names) {
      workers.push(
        spawnWorker({
          db: workerUrl(p.url, schema, name),
          id: name.replaceAll('_', '-'),
          concurrency: options.runs / options.workers,
          countRoundTrips: true,
        }),
      );
    }
    const died = () => workers.map((w) => w.exited()).find((why) => why !== null) ?? null;
    const running = async () =>
      (
        await admin.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM ${schema}.runs WHERE id = ANY($1::text[]) AND status = 'running'`,
          [ids],
        )
      ).rows[0]!.n;
    await untilAllRunning(running, options.runs, died);
    return await measureWindow({
      warmupMs: options.warmupMs,
      windowMs: options.windowMs,
      committed: async () =>
        (
          await admin.query<{ n: number }>(
            `SELECT count(*)::int AS n FROM ${schema}.committed WHERE run_id = ANY($1::text[])`,
            [ids],
          )
        ).rows[0]!.n,
      processes: async () => {
        const pids: number[] = [];
        // One at a time: the admin client is one connection.
        for (const name of names) pids.push(...(await backendPids(admin, name)));
        return { worker: workers.map((w) => w.pid), pg: pids, bench: [process.pid] };
      },
      disk: p.dataDir,
      roundTrips: async () => (await Promise.all(workers.map((w) => w.roundTrips()))).reduce((a, b) => a + b, 0),
      check: async () => {
        const why = died();
        if (why) throw new Error(why);
        const n = await running();
        if (n !== options.runs) throw new Error(`only ${n} of ${options.runs} runs are running: raise stepsPerRun`);
      },
    });
  } finally {
    await Promise.all(workers.map((w) => w.stop()));
  }
}

/** The pids of the backends connected as `applicationName`, when the server is on this machine. */
async function backendPids(admin: pg.Client, applicationName: string): Promise<number[]> {
  const { rows } = await admin.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE application_name = $1', [
    applicationName,
  ]);
  // A pid of this machine's /proc is the server's only if the server is here: its backends are `postgres`.
  return rows.map((row) => row.pid).filter((pid) => processCommand(pid) === 'postgres');
}

/** The worker's DATABASE_URL: the product's schema, and a name of its own for its connections. */
function workerUrl(url: string, schema: string, applicationName: string): string {
  const parsed = new URL(url);
  parsed.searchParams.set('schema', schema);
  parsed.searchParams.set('application_name', applicationName);
  return parsed.toString();
}

/** The server's data directory when it is on this machine (to count its disk's flushes), else undefined. */
export async function localDataDirectory(admin: pg.Client): Promise<string | undefined> {
  try {
    const { rows } = await admin.query<{ dir: string; pid: number }>(
      "SELECT current_setting('data_directory') AS dir, pg_backend_pid() AS pid",
    );
    return processCommand(rows[0]!.pid) === 'postgres' ? rows[0]!.dir : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The floor: one bare client per loop (`runs` connections), each step one autocommitted INSERT of a committed
 * row, a named prepared statement. Connected and warmed before the window like the product's pools.
 */
async function postgresFloor(
  options: PostgresThroughputOptions & {
    schema: string;
    tag: string;
    admin: pg.Client;
    dataDir: string | undefined;
    backends: (applicationName: string) => Promise<number[]>;
  },
): Promise<WindowFigure> {
  const applicationName = `${options.tag}_floor`;
  const clients: pg.Client[] = [];
  let committed = 0;
  let stop = false;
  let failure: unknown = null;
  const loop = async (client: pg.Client, runId: string) => {
    for (let step = 0; !stop; step++) {
      await client.query({
        name: 'waybill-bench-floor-insert',
        text: `INSERT INTO committed (idem_key, run_id, result_json, committed_at)
          VALUES ($1::text, $2::text, $3::text, extract(epoch FROM now()))`,
        values: [stepKey(runId, step), runId, JSON.stringify(step)],
      });
      committed++;
    }
  };
  try {
    for (let i = 0; i < options.runs; i++) {
      const client = new pg.Client({
        connectionString: options.url,
        application_name: applicationName,
        options: `-c search_path=${options.schema} ${FLOOR_STARTUP_OPTION}`,
      });
      clients.push(client);
      await client.connect();
    }
    const loops = clients.map((client, i) =>
      loop(client, `floor-${i}`).catch((error: unknown) => {
        failure ??= error;
        stop = true;
      }),
    );
    try {
      return await measureWindow({
        warmupMs: options.warmupMs,
        windowMs: options.windowMs,
        committed: () => committed,
        processes: async () => ({ bench: [process.pid], pg: await options.backends(applicationName) }),
        disk: options.dataDir,
        check: () => {
          if (failure) throw failure;
        },
      });
    } finally {
      stop = true;
      await Promise.all(loops);
    }
  } finally {
    await Promise.all(clients.map((client) => client.end().catch(() => {})));
  }
}
