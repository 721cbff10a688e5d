/**
 * `npm run bench:dashboard [-- --json] [--only sqlite|postgres] [--duration S] [--warmup S] [--port P] [--build]
 *  [--runs N] [--steps N] [--store FILE|SCHEMA]`
 *
 * Seeds a store at the scale issue #7 names (10,000 runs, about a million committed rows, one run of
 * 100,000 steps; --runs and --steps change the first two, as issue #27's 100,000 runs), tags every run `common` (one in a hundred `rare`, half `env=prod`), starts the production
 * dashboard on it, and loads five pages with autocannon, 10 connections each: the runs list (/), filtered by a
 * rare tag and by a common tag with a metadata pair, the big run's page (/runs/<id>) and the claims page.
 * The pages are measured as a dashboard that has been serving for a while answers them: first every page is loaded
 * in turn for --warmup seconds (60), with 10 connections, and that load is reported on stderr apart: a process just
 * started answers more slowly until V8 has optimized the render's code (bench/RESULTS.md has by how much).
 * Prints p50/p99 per page; with --json the last line of stdout is
 * {"dashboard":{"runs":{"p50":N,"p99":N},"run":{…},"claims":{…}}}. The server is stopped however the bench ends.
 *
 * --store keeps the seeded store: a FILE on SQLite, a SCHEMA of TEST_DATABASE_URL's database on PostgreSQL
 * (--only postgres). It is seeded and tagged when it does not exist, used as it is when it does, so before/after
 * runs at 100,000 runs skip the seeding (minutes on PostgreSQL) and load the same rows. A reused store's history
 * ends when it was seeded, so its throughput card reads zero; the lists and counts are the same.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import autocannon from 'autocannon';
import pg from 'pg';
import { z } from 'zod';
import { openBackend } from '../lib/store/index';
import { seedDemo } from '../lib/store/seed/index';
import { PG_SCHEMA_NAME } from '../lib/store/shared/dialects';
import { ensureBuild, type Server, startServer } from './dashboard-server';

const GOAL = { p50: 100, p99: 300 };
const SEED = { runs: 10_000, steps: 110, bigRunSteps: 100_000, prefix: 'bench' };
const DEFAULT_PG_URL = 'postgres://postgres@127.0.0.1:5432/test';

const whole = (min: number, max: number) =>
  z
    .string({ error: 'needs a whole number' })
    .regex(/^[0-9]+$/, 'needs a whole number')
    .transform(Number)
    .pipe(z.number().int().min(min).max(max));
const flagsSchema = z.strictObject({
  json: z.literal(true, { error: 'takes no value' }).optional(),
  build: z.literal(true, { error: 'takes no value' }).optional(),
  only: z.enum(['sqlite', 'postgres']).default('sqlite'),
  duration: whole(1, 600).default(5),
  warmup: whole(0, 600).default(60),
  port: whole(3400, 3499).default(3457),
  runs: whole(1, 1_000_000).default(SEED.runs),
  steps: whole(1, 1000).default(SEED.steps),
  store: z.string({ error: 'needs a file path (SQLite) or a schema name (PostgreSQL)' }).min(1).optional(),
});
type Flags = z.infer<typeof flagsSchema>;

const log = (line: string) => process.stderr.write(`${line}\n`);

function fail(message: string): never {
  log(`bench:dashboard: ${message}`);
  process.exit(2);
}

function parseFlags(argv: string[]): Flags {
  const raw: Record<string, string | true> = {};
  for (let i = 0; i < argv.length; i++) {
    const match = /^--([^=]+)(?:=(.*))?$/.exec(argv[i]!);
    if (!match) fail(`unexpected argument ${JSON.stringify(argv[i])}`);
    const [, name, inline] = match as unknown as [string, string, string | undefined];
    const next = argv[i + 1];
    if (inline !== undefined) raw[name] = inline;
    else if (name !== 'json' && name !== 'build' && next !== undefined && !next.startsWith('--'))
      raw[name] = argv[++i]!;
    else raw[name] = true;
  }
  const parsed = flagsSchema.safeParse(raw);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0]!;
  if (issue.code === 'unrecognized_keys') fail(`unknown flag --${issue.keys[0]}`);
  fail(`--${issue.path.join('.')}: ${issue.message}`);
}

interface BenchStore {
  url: string;
  /** Seeded by an earlier run with --store: used as it is. */
  kept: boolean;
  /** Removes what a seeding that failed half-way left, so it is not reused as if whole. */
  discard: () => Promise<void>;
}

/**
 * The store the pages read: with --store, the kept file or schema (seeded if it does not exist yet); without,
 * a temp SQLite file or a fresh schema on TEST_DATABASE_URL, removed when the bench ends.
 */
async function openBenchStore(flags: Flags, undo: (() => unknown)[]): Promise<BenchStore> {
  if (flags.only === 'sqlite') {
    if (flags.store) {
      const file = resolve(flags.store);
      const discard = async () => {
        for (const suffix of ['', '-wal', '-shm']) rmSync(`${file}${suffix}`, { force: true });
      };
      return { url: `file:${file}`, kept: existsSync(file), discard };
    }
    const dir = mkdtempSync(join(tmpdir(), 'waybill-dashboard-'));
    const discard = async () => rmSync(dir, { recursive: true, force: true });
    undo.push(discard);
    return { url: `file:${join(dir, 'bench.db')}`, kept: false, discard };
  }
  const base = process.env.TEST_DATABASE_URL ?? DEFAULT_PG_URL;
  if (flags.store !== undefined && !PG_SCHEMA_NAME.test(flags.store)) {
    fail(`--store ${JSON.stringify(flags.store)}: on PostgreSQL it names a schema: lower-case letters, digits and _`);
  }
  const schema = flags.store ?? `wb_bench_${randomBytes(5).toString('hex')}`;
  const discard = () =>
    withClient(base, (c) => c.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)).then(() => undefined);
  const kept =
    flags.store !== undefined &&
    (await withClient(
      base,
      async (c) => (await c.query('SELECT 1 FROM pg_namespace WHERE nspname = $1', [schema])).rowCount === 1,
    ));
  if (flags.store === undefined) undo.push(discard);
  const url = new URL(base);
  url.searchParams.set('schema', schema);
  return { url: url.toString(), kept, discard };
}

async function seed(url: string, shape: typeof SEED): Promise<void> {
  const store = await openBackend(url, { synchronous: 'normal' });
  const started = performance.now();
  let shown = 0;
  try {
    const report = await seedDemo(store, shape, (done, total) => {
      if (done - shown >= 100_000 || done === total) {
        shown = done;
        log(`  seeded ${done.toLocaleString('en-US')} / ${total.toLocaleString('en-US')} committed rows`);
      }
    });
    log(
      `bench: seeded ${report.runs} runs, ${report.committed.toLocaleString('en-US')} committed rows, ${report.claims} claims ` +
        `in ${((performance.now() - started) / 1000).toFixed(1)} s`,
    );
  } finally {
    await store.close();
  }
}

/** Issue #27's filters: every run carries `common`, one in a hundred `rare`, every other `env=prod`. */
async function tag(url: string): Promise<void> {
  const store = await openBackend(url, { synchronous: 'normal' });
  try {
    let n = 0;
    let after: { updatedAt: number; id: string } | undefined;
    for (;;) {
      const page = await store.listRuns({ limit: 500, claimTtlMs: 30_000, after });
      for (const run of page) {
        await store.tagRun(run.id, {
          tags: n % 100 === 0 ? ['common', 'rare'] : ['common'],
          metadata: { env: n % 2 === 0 ? 'prod' : 'dev' },
        });
        n++;
      }
      if (page.length < 500) break;
      after = { updatedAt: page.at(-1)!.updatedAt, id: page.at(-1)!.id };
    }
    log(`bench: tagged ${n.toLocaleString('en-US')} runs`);
  } finally {
    await store.close();
  }
  if (url.startsWith('postgres')) await analyzeTags(url);
}

/**
 * The seed leaves its tables analyzed; the tags written after it are analyzed here, as autovacuum would within
 * a minute of them on a user's database (it is off on some, this machine's among them). Unanalyzed, the runs
 * page's lookup of fifty runs' tags is planned as a scan of every run's.
 */
async function analyzeTags(url: string): Promise<void> {
  const parsed = new URL(url);
  const schema = parsed.searchParams.get('schema') ?? 'public';
  parsed.searchParams.delete('schema');
  await withClient(parsed.toString(), (c) => c.query(`ANALYZE "${schema}".run_tags, "${schema}".run_metadata`));
}

/** One connection of the bench's own to `url`, for `fn`, then closed. */
async function withClient<T>(url: string, fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

const PAGES = {
  runs: '/',
  runsByRareTag: '/?tag=rare',
  runsByTagAndMeta: '/?tag=common&meta=env%3Dprod',
  run: `/runs/${SEED.prefix}-big`,
  claims: '/claims',
};

/** Every page in turn, 10 connections, two seconds each, until `seconds` have passed; reported, not measured. */
async function warmUp(server: Server, seconds: number): Promise<void> {
  if (seconds === 0) return;
  log(`bench: warming up: every page in turn for ${seconds} s with 10 connections`);
  const deadline = Date.now() + seconds * 1000;
  while (Date.now() < deadline) {
    for (const path of Object.values(PAGES)) {
      const left = Math.ceil((deadline - Date.now()) / 1000);
      if (left <= 0) break;
      const result = await autocannon({ url: `${server.url}${path}`, connections: 10, duration: Math.min(2, left) });
      log(`  warm-up ${path}: ${result.requests.total} requests, p50 ${result.latency.p50} ms`);
    }
  }
}

async function load(server: Server, path: string, seconds: number): Promise<{ p50: number; p99: number }> {
  const url = `${server.url}${path}`;
  // Warm up: the first requests compile nothing in production, but fill caches and the connection pool.
  for (let i = 0; i < 5; i++) await (await fetch(url)).arrayBuffer();
  // One connection first, on stderr only: what one request costs, which ten queued on one process multiply.
  const alone = await autocannon({ url, connections: 1, duration: Math.min(2, seconds) });
  log(
    `  ${path}: one connection: p50 ${alone.latency.p50} ms, ${Math.round((await (await fetch(url)).arrayBuffer()).byteLength / 1024)} KiB a page`,
  );
  const result = await autocannon({ url, connections: 10, duration: seconds });
  if (result.non2xx > 0 || result.errors > 0 || result.timeouts > 0) {
    throw new Error(`${path}: ${result.non2xx} non-2xx answers, ${result.errors} errors, ${result.timeouts} timeouts`);
  }
  if (result.requests.total === 0) {
    // Not one answer within the window, and autocannon's percentiles read 0, which would pass: each took longer.
    log(`  ${path}: no answer within ${seconds} s; its p50 and p99 are counted as ${seconds * 1000} ms`);
    return { p50: seconds * 1000, p99: seconds * 1000 };
  }
  log(`  ${path}: ${result.requests.total} requests, p50 ${result.latency.p50} ms, p99 ${result.latency.p99} ms`);
  return { p50: result.latency.p50, p99: result.latency.p99 };
}

async function main(): Promise<void> {
  const flags = parseFlags(process.argv.slice(2));
  const undo: (() => unknown)[] = [];
  let server: Server | null = null;
  const cleanup = async () => {
    await server?.stop();
    for (const fn of undo.reverse())
      await Promise.resolve()
        .then(fn)
        .catch(() => undefined);
  };
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      log(`bench:dashboard: ${signal}, stopping the server`);
      void cleanup().finally(() => process.exit(130));
    });
  }
  try {
    await ensureBuild(Boolean(flags.build), log);
    const store = await openBenchStore(flags, undo);
    const url = store.url;
    if (store.kept) {
      log(`bench: using the store seeded before in ${flags.store} (--runs and --steps are what it was seeded with)`);
    } else {
      log(`bench: seeding ${flags.only}…`);
      const shape = { ...SEED, runs: flags.runs, steps: flags.steps };
      try {
        await seed(url, shape);
        await tag(url);
      } catch (error) {
        // A half-seeded store would be reused as if whole next time.
        await store.discard();
        throw error;
      }
    }
    server = await startServer(url, flags.port, log);
    await warmUp(server, flags.warmup);
    log(`bench: loading each page for ${flags.duration} s with 10 connections`);
    const dashboard = {
      runs: await load(server, PAGES.runs, flags.duration),
      runsByRareTag: await load(server, PAGES.runsByRareTag, flags.duration),
      runsByTagAndMeta: await load(server, PAGES.runsByTagAndMeta, flags.duration),
      run: await load(server, PAGES.run, flags.duration),
      claims: await load(server, PAGES.claims, flags.duration),
    };
    const lines = [
      `dashboard on ${flags.only}: ${flags.runs.toLocaleString('en-US')} runs, one of ${SEED.bigRunSteps.toLocaleString('en-US')} steps; ` +
        `10 connections after ${flags.warmup} s of warm-up; goal p50 ≤ ${GOAL.p50} ms, p99 ≤ ${GOAL.p99} ms`,
      ...Object.entries(dashboard).map(
        ([page, f]) =>
          `  ${page.padEnd(16)} p50 ${String(f.p50).padStart(5)} ms  p99 ${String(f.p99).padStart(5)} ms  ` +
          (f.p50 <= GOAL.p50 && f.p99 <= GOAL.p99 ? 'met' : 'NOT MET'),
      ),
    ];
    if (flags.json) {
      log(lines.join('\n'));
      process.stdout.write(`${JSON.stringify({ dashboard })}\n`);
    } else {
      process.stdout.write(`${lines.join('\n')}\n`);
    }
  } finally {
    await cleanup();
  }
}

main().catch((error: unknown) => {
  log(`bench:dashboard: ${error instanceof Error ? error.message : String(error)}`);
  process.exitCode = 1;
});
