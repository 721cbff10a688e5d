/**
 * `npm run bench [-- --json] [--steps N] [--rounds N] [--duration S] [--windows N] [--only sqlite|postgres|throughput|startup]
 *  [--sources]`
 *
 * The per-step cost of runOnce + progress as the product pays it (runAgent, a side effect that costs
 * nothing; the built package, or the sources under tsx with --sources: bench/product.ts), beside floors
 * measured in the same run: the bare protocol on the same kind of database, in two commits a step (the
 * article's) and in one (as the product does it). The ratios are what Waybill adds over
 * the protocol. Then throughput (bench/throughput.ts): 64 runs in flight in real worker processes, in steps
 * a second over a window of S seconds, beside 64 one-commit loops on bare connections, in N interleaved rounds
 * (5 by default) whose medians it reports. Then how long
 * `waybill --help` takes to start (bench/startup.ts), beside a bare `node -e 0`. Progress and the tables go
 * to stderr under --json, whose single JSON object is the last line of stdout.
 *
 * `--only grown [--windows N] [--backend sqlite|postgres]` runs what no other section does: the lone run and the 64 runs on a store that
 * already holds a million committed steps beside an empty one, interleaved (bench/grown.ts), N throughput windows
 * on each (default 3). The grown store is seeded once and kept (bench/grown-store.ts).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';
import { benchGrown } from './grown';
import { benchPostgres } from './postgres';
import { loadProduct, type Product } from './product';
import { benchSqlite, type Synchronous } from './sqlite';
import { benchStartup } from './startup';
import { type Figure, figure, PER_STEP_NAMES, type Samples, spread } from './stats';
import { benchThroughput } from './throughput';
import { killWorkers } from './workers';

const GOALS = { sqlite: 1.1, postgres: 1.15 } as const;
/**
 * A lone run against the one-commit floor, on SQLite FULL and on PostgreSQL (issues #17 and #29 item 4); SQLite
 * NORMAL has no goal for it.
 */
const ONE_COMMIT_GOAL = 1.15;
/** `waybill --help`, spawn to exit: "well under half a second" (issue #12). */
const STARTUP_GOAL_MS = 250;
const STARTUP_ROUNDS = 15;
const DEFAULT_PG_URL = 'postgres://postgres@127.0.0.1:5432/test';

const count = (max: number) =>
  z
    .string({ error: 'needs a whole number' })
    .regex(/^[0-9]+$/, 'needs a whole number')
    .transform(Number)
    .pipe(z.number().int().min(1).max(max));

const flagsSchema = z.strictObject({
  json: z.literal(true, { error: 'takes no value' }).optional(),
  steps: count(1_000_000).default(1000),
  rounds: count(101).default(7),
  /** Seconds each throughput phase is measured over, after its warm-up. */
  duration: count(600).default(5),
  only: z.enum(['sqlite', 'postgres', 'throughput', 'startup', 'grown']).optional(),
  /** Throughput windows on each side: interleaved rounds of the throughput section (5), or on each store (--only grown, 3). */
  windows: count(21).optional(),
  /** One backend only (--only grown). */
  backend: z.enum(['sqlite', 'postgres']).optional(),
  /** The lone runs time the sources under tsx instead of the built package (bench/product.ts). */
  sources: z.literal(true, { error: 'takes no value' }).optional(),
});
type Flags = z.infer<typeof flagsSchema>;

const envSchema = z.object({
  TEST_DATABASE_URL: z
    .string()
    .regex(/^postgres(ql)?:\/\//, 'must start with postgres://')
    .default(DEFAULT_PG_URL),
});

interface Row {
  label: string;
  goal: number;
  oneCommitGoal: number | null;
  figure: Figure;
  samples: Samples;
}

/** --name value, --name=value, or a bare --name (true); anything else is an error. */
function parseFlags(argv: string[]): Flags {
  const raw: Record<string, string | true> = {};
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const match = /^--([^=]+)(?:=(.*))?$/.exec(arg);
    if (!match) fail(`unexpected argument ${JSON.stringify(arg)}`);
    const [, name, inline] = match as unknown as [string, string, string | undefined];
    const next = argv[i + 1];
    if (inline !== undefined) raw[name] = inline;
    else if (name !== 'json' && name !== 'sources' && next !== undefined && !next.startsWith('--'))
      raw[name] = argv[++i]!;
    else raw[name] = true;
  }
  const parsed = flagsSchema.safeParse(raw);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0]!;
  if (issue.code === 'unrecognized_keys') fail(`unknown flag --${issue.keys[0]}`);
  fail(`--${issue.path.join('.')}: ${issue.message}`);
}

function fail(message: string): never {
  process.stderr.write(`bench: ${message}\n`);
  process.exit(2);
}

function table(rows: Row[], flags: Flags, ran: Product['ran']): string {
  const head = [
    'backend',
    'product µs/step',
    '2-commit floor',
    'ratio',
    'goal',
    'met',
    '1-commit floor',
    'ratio',
    'goal',
    'met',
    'product range',
    '2-commit range',
    '1-commit range',
  ];
  const body = rows.map((r) => [
    r.label,
    r.figure.stepUs.toFixed(1),
    r.figure.floorUs.toFixed(1),
    r.figure.ratio.toFixed(3),
    `≤ ${r.goal.toFixed(2)}`,
    r.figure.ratio <= r.goal ? 'yes' : 'NO',
    r.figure.oneCommitFloorUs.toFixed(1),
    r.figure.oneCommitRatio.toFixed(3),
    r.oneCommitGoal === null ? '—' : `≤ ${r.oneCommitGoal.toFixed(2)}`,
    r.oneCommitGoal === null ? '—' : r.figure.oneCommitRatio <= r.oneCommitGoal ? 'yes' : 'NO',
    spread(r.samples.product),
    spread(r.samples.floor),
    spread(r.samples.oneCommitFloor),
  ]);
  const widths = head.map((h, c) => Math.max(h.length, ...body.map((line) => line[c]!.length)));
  const format = (cells: string[]) =>
    cells.map((cell, c) => (c === 0 ? cell.padEnd(widths[c]!) : cell.padStart(widths[c]!))).join('  ');
  return [
    `runAgent (${ran === 'dist' ? 'the built package, dist/' : 'the sources, via tsx'}), ${flags.steps} steps, ` +
      `median of ${flags.rounds} rounds; floors = the bare protocol on the same kind of database in two commits a ` +
      'step and in one, interleaved; µs/step',
    format(head),
    ...body.map(format),
    ...perStepTable(rows, flags),
  ].join('\n');
}

/** What a committed step spent of the limiting resource, product beside floors, from the rounds timed above. */
function perStepTable(rows: Row[], flags: Flags): string[] {
  const head = ['backend', 'per committed step', 'product', '2-commit floor', '1-commit floor'];
  const body: string[][] = [];
  for (const r of rows) {
    const perStep = r.figure.perStep;
    if (!perStep) continue;
    for (const name of Object.keys(perStep.product)) {
      const cell = (value: number | undefined) => (value === undefined ? '?' : value.toFixed(2));
      body.push([
        r.label,
        PER_STEP_NAMES[name] ?? name,
        cell(perStep.product[name]),
        cell(perStep.floor[name]),
        cell(perStep.oneCommitFloor[name]),
      ]);
    }
  }
  if (body.length === 0) return [];
  const widths = head.map((h, c) => Math.max(h.length, ...body.map((line) => line[c]!.length)));
  const format = (cells: string[]) =>
    cells.map((cell, c) => (c <= 1 ? cell.padEnd(widths[c]!) : cell.padStart(widths[c]!))).join('  ');
  return [
    '',
    `what a committed step spent, medians of ${flags.rounds} interleaved rounds: SQLite's WAL pages and commits ` +
      '(each an fsync at FULL; none at NORMAL; checkpoints not counted) from its wal-index, in as many untimed ' +
      "counting rounds after the timed ones, checkpoints held off for them only; PostgreSQL's CPU in this process " +
      '(the client) and in the backends serving it (/proc), in the timed rounds, total = the sum of the two medians',
    format(head),
    ...body.map(format),
  ];
}

async function main(): Promise<void> {
  const flags = parseFlags(process.argv.slice(2));
  const log = (message: string) => process.stderr.write(`${message}\n`);
  const rows: Row[] = [];
  const json: Record<string, unknown> = {};
  // Ctrl-C must not leave temp files or schemas behind; finally blocks do not run on a signal.
  const undo: (() => void | Promise<void>)[] = [];
  process.once('SIGINT', () => {
    log('bench: interrupted, cleaning up');
    // The workers first: their schemas cannot be dropped under them.
    void killWorkers()
      .then(() => Promise.allSettled(undo.map((fn) => fn())))
      .then(() => process.exit(130));
  });

  const lone = flags.only === undefined || flags.only === 'sqlite' || flags.only === 'postgres';
  const product = lone ? await loadProduct(flags.sources === true) : null;
  if (product) json.lone = { ran: product.ran };

  if (product && flags.only !== 'postgres') {
    const dir = mkdtempSync(join(tmpdir(), 'waybill-bench-'));
    const removeDir = () => rmSync(dir, { recursive: true, force: true });
    undo.push(removeDir);
    try {
      const sqlite: Record<string, Figure> = {};
      for (const synchronous of ['full', 'normal'] as Synchronous[]) {
        log(`sqlite ${synchronous}: ${flags.rounds} rounds of ${flags.steps} steps…`);
        const samples = await benchSqlite(synchronous, { steps: flags.steps, rounds: flags.rounds, dir, product });
        sqlite[synchronous] = figure(samples);
        rows.push({
          label: `sqlite ${synchronous.toUpperCase()}`,
          goal: GOALS.sqlite,
          oneCommitGoal: synchronous === 'full' ? ONE_COMMIT_GOAL : null,
          figure: sqlite[synchronous],
          samples,
        });
      }
      json.sqlite = sqlite;
    } finally {
      removeDir();
    }
  }

  // Read here, not in lib/config: it names the test database, which the product never opens.
  const postgresUrl = () => {
    const env = envSchema.safeParse(process.env);
    if (!env.success) fail(`TEST_DATABASE_URL: ${env.error.issues[0]!.message}`);
    return env.data.TEST_DATABASE_URL;
  };

  if (product && flags.only !== 'sqlite') {
    log(`postgres: ${flags.rounds} rounds of ${flags.steps} steps…`);
    const result = await benchPostgres({
      url: postgresUrl(),
      steps: flags.steps,
      rounds: flags.rounds,
      onInterrupt: (fn) => undo.push(fn),
      product,
    });
    if ('skipped' in result) {
      log(`postgres: SKIPPED: ${result.skipped}`);
      if (flags.only === 'postgres') process.exit(1);
    } else {
      json.postgres = figure(result);
      rows.push({
        label: 'postgres',
        goal: GOALS.postgres,
        oneCommitGoal: ONE_COMMIT_GOAL,
        figure: figure(result),
        samples: result,
      });
    }
  }

  const lines: string[] = product && rows.length > 0 ? [table(rows, flags, product.ran)] : [];
  if (flags.only === undefined || flags.only === 'throughput') {
    const dir = mkdtempSync(join(tmpdir(), 'waybill-bench-'));
    const removeDir = () => rmSync(dir, { recursive: true, force: true });
    undo.push(removeDir);
    try {
      const throughput = await benchThroughput({
        windowMs: flags.duration * 1000,
        rounds: flags.windows ?? 5,
        dir,
        postgresUrl: postgresUrl(),
        log,
        onInterrupt: (fn) => undo.push(fn),
      });
      for (const why of throughput.skipped) log(why);
      json.throughput = throughput.json;
      lines.push(throughput.text);
    } finally {
      removeDir();
    }
  }
  if (flags.only === 'grown') {
    const dir = mkdtempSync(join(tmpdir(), 'waybill-bench-'));
    const removeDir = () => rmSync(dir, { recursive: true, force: true });
    undo.push(removeDir);
    try {
      const grown = await benchGrown({
        steps: flags.steps,
        rounds: flags.rounds,
        throughputRounds: flags.windows ?? 3,
        windowMs: flags.duration * 1000,
        dir,
        postgresUrl: postgresUrl(),
        backend: flags.backend,
        log,
        onInterrupt: (fn) => undo.push(fn),
      });
      for (const why of grown.skipped) log(why);
      json.grown = grown.json;
      lines.push(grown.text);
    } finally {
      removeDir();
    }
  }
  if (flags.only === undefined || flags.only === 'startup') {
    log(`startup: ${STARTUP_ROUNDS} rounds of waybill --help…`);
    const startup = benchStartup(STARTUP_ROUNDS);
    json.startup = startup;
    lines.push(
      `waybill --help (${startup.ran}), median of ${STARTUP_ROUNDS}: ${startup.helpMs} ms spawn to exit ` +
        `(node -e 0: ${startup.nodeMs} ms); goal ≤ ${STARTUP_GOAL_MS} ms: ${startup.helpMs <= STARTUP_GOAL_MS ? 'met' : 'NOT met'}`,
    );
  }
  const text = lines.join('\n\n');
  if (flags.json) {
    log(text);
    process.stdout.write(`${JSON.stringify(json)}\n`);
  } else {
    process.stdout.write(`${text}\n`);
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`bench: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
