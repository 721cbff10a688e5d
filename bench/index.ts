/**
 * `npm run bench [-- --json] [--steps N] [--rounds N] [--only sqlite|postgres|startup]`
 *
 * The per-step cost of runOnce + progress as the product pays it (runAgent, a side effect that costs
 * nothing), beside a floor measured in the same run: the bare protocol on the same kind of database.
 * The ratio is what Waybill adds over the article's protocol. Then how long `waybill --help` takes to start
 * (bench/startup.ts), beside a bare `node -e 0`. Progress and the table go to stderr under
 * --json, whose single JSON object is the last line of stdout.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';
import { benchPostgres } from './postgres';
import { benchSqlite, type Synchronous } from './sqlite';
import { benchStartup } from './startup';
import { figure, spread, type Figure, type Samples } from './stats';

const GOALS = { sqlite: 1.1, postgres: 1.15 } as const;
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
  only: z.enum(['sqlite', 'postgres', 'startup']).optional(),
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
    else if (name !== 'json' && next !== undefined && !next.startsWith('--')) raw[name] = argv[++i]!;
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

function table(rows: Row[], flags: Flags): string {
  const head = ['backend', 'product µs/step', 'floor µs/step', 'ratio', 'goal', 'met', 'product range', 'floor range'];
  const body = rows.map((r) => [
    r.label,
    r.figure.stepUs.toFixed(1),
    r.figure.floorUs.toFixed(1),
    r.figure.ratio.toFixed(3),
    `≤ ${r.goal.toFixed(2)}`,
    r.figure.ratio <= r.goal ? 'yes' : 'NO',
    spread(r.samples.product),
    spread(r.samples.floor),
  ]);
  const widths = head.map((h, c) => Math.max(h.length, ...body.map((line) => line[c]!.length)));
  const format = (cells: string[]) =>
    cells.map((cell, c) => (c === 0 ? cell.padEnd(widths[c]!) : cell.padStart(widths[c]!))).join('  ');
  return [
    `runAgent, ${flags.steps} steps, median of ${flags.rounds} rounds; floor = the bare protocol on the same kind of database, interleaved`,
    format(head),
    ...body.map(format),
  ].join('\n');
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
    void Promise.allSettled(undo.map((fn) => fn())).then(() => process.exit(130));
  });

  if (flags.only === undefined || flags.only === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), 'waybill-bench-'));
    const removeDir = () => rmSync(dir, { recursive: true, force: true });
    undo.push(removeDir);
    try {
      const sqlite: Record<string, Figure> = {};
      for (const synchronous of ['full', 'normal'] as Synchronous[]) {
        log(`sqlite ${synchronous}: ${flags.rounds} rounds of ${flags.steps} steps…`);
        const samples = await benchSqlite(synchronous, { steps: flags.steps, rounds: flags.rounds, dir });
        sqlite[synchronous] = figure(samples);
        rows.push({
          label: `sqlite ${synchronous.toUpperCase()}`,
          goal: GOALS.sqlite,
          figure: sqlite[synchronous],
          samples,
        });
      }
      json.sqlite = sqlite;
    } finally {
      removeDir();
    }
  }

  if (flags.only === undefined || flags.only === 'postgres') {
    // Read here, not in lib/config: it names the test database, which the product never opens.
    const env = envSchema.safeParse(process.env);
    if (!env.success) fail(`TEST_DATABASE_URL: ${env.error.issues[0]!.message}`);
    log(`postgres: ${flags.rounds} rounds of ${flags.steps} steps…`);
    const result = await benchPostgres({
      url: env.data.TEST_DATABASE_URL,
      steps: flags.steps,
      rounds: flags.rounds,
      onInterrupt: (fn) => undo.push(fn),
    });
    if ('skipped' in result) {
      log(`postgres: SKIPPED: ${result.skipped}`);
      if (flags.only === 'postgres') process.exit(1);
    } else {
      json.postgres = figure(result);
      rows.push({ label: 'postgres', goal: GOALS.postgres, figure: figure(result), samples: result });
    }
  }

  const lines: string[] = rows.length > 0 ? [table(rows, flags)] : [];
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
