/**
 * `waybill`: routes a command line to its command and turns what it throws into an exit code and one line on
 * stderr — under --json, one JSON object `{"error":{"code","message","exitCode"}}` instead. Exit codes: 0 done,
 * 1 failed (not found, refused transition, conflict, store error), 2 bad input or a store this Waybill refuses
 * to open (nothing was written), 130 interrupted. Output piped into a reader that stops early
 * (`waybill inspect r1 | head`) ends the process quietly: the reader has what it wanted.
 */
// First: a project on zod 3 is told so before any schema below is built (../zod-version.ts).
import '../zod-version';
import { ConfigError, ControlInputError, StoreRefusedError, UsageError, WaybillError } from '../errors';
import type { RunAction } from '../store/types';
import { createCli, type Cli, type CliDeps } from './context';
import { packageVersion } from './version';

type Command = (cli: Cli, args: string[]) => Promise<number>;

// Each command's module is loaded only when it runs: `waybill runs` need not load the worker and workflows.
const lazy =
  <M>(load: () => Promise<M>, pick: (m: M) => Command): Command =>
  async (cli, args) =>
    pick(await load())(cli, args);
const action = (name: RunAction): Command =>
  lazy(
    () => import('./control'),
    (m) => (cli, args) => m.act(cli, name, args),
  );

const COMMANDS: Record<string, { usage: string; summary: string; run: Command }> = {
  start: {
    usage: 'start <workflow> [--input JSON|@file] [--id ID] [--follow]',
    summary: 'queue a run',
    run: lazy(
      () => import('./control'),
      (m) => m.start,
    ),
  },
  workflows: {
    usage: 'workflows',
    summary: 'what can be started: built-ins and published workflows, and who serves each',
    run: lazy(
      () => import('./workflows'),
      (m) => m.workflows,
    ),
  },
  runs: {
    usage: 'runs [--status S] [--waiting approval|signal|sleep] [--workflow W] [--search Q] [--limit N]',
    summary: "list runs, outside clients' included",
    run: lazy(
      () => import('./runs'),
      (m) => m.runs,
    ),
  },
  inspect: {
    usage: 'inspect <runId>',
    summary: 'one run: progress, claims, committed steps, events',
    run: lazy(
      () => import('./runs'),
      (m) => m.inspect,
    ),
  },
  logs: {
    usage: 'logs <runId> [--follow] [--limit N] [--after SEQ]',
    summary: "what a command workflow's program printed (newest 100 lines); --follow: new lines until the run ends",
    run: lazy(
      () => import('./logs'),
      (m) => m.logs,
    ),
  },
  claims: {
    usage: 'claims [--orphaned] [--run ID]',
    summary: 'list claims (in-flight side effects)',
    run: lazy(
      () => import('./claims'),
      (m) => m.claims,
    ),
  },
  expire: {
    usage: 'expire <key…> | --all-orphaned [--force] [--reason TEXT]',
    summary: 'give up on claims: their steps run again',
    run: lazy(
      () => import('./claims'),
      (m) => m.expire,
    ),
  },
  resolve: {
    usage: 'resolve <key> --result JSON|@file [--note TEXT] [--force]',
    summary: "commit a claim's result by hand",
    run: lazy(
      () => import('./claims'),
      (m) => m.resolve,
    ),
  },
  pause: { usage: 'pause <runId> | --all-matching …', summary: 'pause a queued or running run', run: action('pause') },
  resume: { usage: 'resume <runId> | --all-matching …', summary: 'queue a paused run again', run: action('resume') },
  cancel: {
    usage: 'cancel <runId> [--reason TEXT] | --all-matching …',
    summary: 'cancel a run',
    run: action('cancel'),
  },
  retry: {
    usage: 'retry <runId> | --all-matching …',
    summary: 'queue a failed or cancelled run again',
    run: action('retry'),
  },
  step: {
    usage: 'step <runId> <n>',
    summary: 'one step: its key, every attempt, its result, and results a rerun replaced',
    run: lazy(
      () => import('./rewind'),
      (m) => m.step,
    ),
  },
  rerun: {
    usage: 'rerun <runId> --from-step N|NAME [--input JSON|@file] [--reason TEXT] | --all-matching …',
    summary:
      'run a finished, failed, cancelled or paused run again from step N (or a named step); earlier results move to history',
    run: lazy(
      () => import('./rewind'),
      (m) => m.rerun,
    ),
  },
  fork: {
    usage: 'fork <runId> --from-step N|NAME [--id NEW] [--input JSON|@file] [--reason TEXT]',
    summary: 'a new run with steps before N copied from this one, the rest run anew',
    run: lazy(
      () => import('./rewind'),
      (m) => m.fork,
    ),
  },
  approve: {
    usage: 'approve <runId> [<name>] [--note TEXT]',
    summary: "approve a run's waitForApproval (its one open approval when no name)",
    run: lazy(
      () => import('./waits'),
      (m) => (cli, args) => m.decide(cli, true, args),
    ),
  },
  reject: {
    usage: 'reject <runId> [<name>] --note TEXT',
    summary: "reject a run's waitForApproval: the run decides what that means",
    run: lazy(
      () => import('./waits'),
      (m) => (cli, args) => m.decide(cli, false, args),
    ),
  },
  signal: {
    usage: 'signal <runId> <name> [--payload JSON|@file]',
    summary: 'send a run a signal (kept if it is not waiting for it yet)',
    run: lazy(
      () => import('./waits'),
      (m) => m.signal,
    ),
  },
  token: {
    usage: 'token --run ID [--ttl 24h]',
    summary: 'print a token that may use the checkpoint protocol for that run only',
    run: lazy(
      () => import('./token'),
      (m) => m.token,
    ),
  },
  sweep: {
    usage: 'sweep [--reason TEXT]',
    summary: 'expire every orphaned claim',
    run: lazy(
      () => import('./claims'),
      (m) => m.sweep,
    ),
  },
  audit: {
    usage: 'audit [--actor A] [--action X] [--run ID] [--since T] [--until T] [--limit N] [--before ID]',
    summary: "the operators' log, newest first: the dashboard's, the API's and the CLI's actions",
    run: lazy(
      () => import('./audit'),
      (m) => m.audit,
    ),
  },
  worker: {
    usage: 'worker [--workflows MODULE] [--concurrency N] [--id NAME] [--url URL]',
    summary:
      "execute runs (built-ins and MODULE's workflows) until SIGTERM; --url (else WAYBILL_URL): the dashboard's address for the programs of command workflows",
    run: lazy(
      () => import('./worker'),
      (m) => m.worker,
    ),
  },
  prune: {
    usage: 'prune --older-than 30d [--dry-run] [--include-external] [--force] [--batch-size 500] [--reason TEXT]',
    summary: 'delete finished runs older than the limit, in batches',
    run: lazy(
      () => import('./prune'),
      (m) => m.prune,
    ),
  },
  'seed-demo': {
    usage: 'seed-demo [--runs 100] [--steps 50] [--big-run-steps K] [--prefix seed]',
    summary: 'write a synthetic history to try the dashboard at scale',
    run: lazy(
      () => import('./seed'),
      (m) => m.seedDemo,
    ),
  },
  up: {
    usage: 'up [--no-demo] [--no-worker]',
    summary: 'the dashboard and one worker, until Ctrl-C (npm start in a checkout)',
    run: lazy(
      () => import('../launch/commands'),
      (m) => m.up,
    ),
  },
  dashboard: {
    usage: 'dashboard',
    summary: 'serve the dashboard on HOST:PORT (default 127.0.0.1:3000) until Ctrl-C',
    run: lazy(
      () => import('../launch/commands'),
      (m) => m.dashboard,
    ),
  },
  drill: {
    usage: 'drill [--steps 1000] [--kill-at 620] [--kills 1] [--latency-ms 20] [--in-place]',
    summary: "the article's crash experiment, with a real SIGKILL, on a throwaway store beside the configured one",
    run: lazy(
      () => import('./drill'),
      (m) => m.drill,
    ),
  },
};

const BULK_HELP = `pause, resume, cancel, retry and rerun --all-matching [--status S] [--waiting KIND] [--workflow W] [--search Q] [--reason TEXT] --yes (rerun also --from-step N|NAME): every run the filters match (as in runs), audited per run; without --yes, only the count`;

const GLOBAL_HELP = `global options: --db URL (instead of DATABASE_URL), --as NAME (who the audit log records; else cli:<OS user>), --json (one JSON document on stdout, errors as JSON on stderr), --help, --version`;

export function usage(): string {
  const width = Math.max(...Object.values(COMMANDS).map((c) => c.usage.length));
  return [
    'usage: waybill <command> [options]',
    '',
    ...Object.values(COMMANDS).map((c) => `  waybill ${c.usage.padEnd(width)}  ${c.summary}`),
    '',
    BULK_HELP,
    GLOBAL_HELP,
  ].join('\n');
}

/** Runs one command line and returns its exit code. Never throws. */
export async function main(argv: string[], deps: CliDeps = {}): Promise<number> {
  let name = 'waybill';
  try {
    const { command, args } = split(argv);
    if (command === 'version') {
      process.stdout.write(`${packageVersion()}\n`);
      return 0;
    }
    if (command === undefined || command === 'help') {
      const help = command === 'help' || args.includes('--help') || args.includes('-h');
      (help ? process.stdout : process.stderr).write(`${usage()}\n`);
      return help ? 0 : 2;
    }
    const entry = Object.hasOwn(COMMANDS, command) ? COMMANDS[command] : undefined;
    if (!entry) throw new UsageError(`unknown command ${JSON.stringify(command)} (waybill --help lists them)`);
    name = `waybill ${command}`;
    if (args.includes('--help') || args.includes('-h')) {
      process.stdout.write(`usage: waybill ${entry.usage}\n${GLOBAL_HELP}\n`);
      return 0;
    }
    return await entry.run(createCli(name, deps), args);
  } catch (error) {
    const message = oneLine(
      error instanceof ControlInputError ? asFlags(error) : error instanceof Error ? error.message : String(error),
    );
    const code = exitCode(error);
    if (wantsJson(argv))
      process.stderr.write(
        `${JSON.stringify({ error: { code: errorCode(error), message, command: name, exitCode: code } })}\n`,
      );
    else process.stderr.write(`${name}: ${message}\n`);
    return code;
  }
}

/** --json anywhere before a `--` asks for JSON, errors included. */
function wantsJson(argv: string[]): boolean {
  const end = argv.indexOf('--');
  return (end === -1 ? argv : argv.slice(0, end)).includes('--json');
}

/** The error's code as the HTTP API would name it: a script handles both the same way. */
export function errorCode(error: unknown): string {
  if (error instanceof WaybillError) return error.code;
  return 'INTERNAL';
}

/** main() for a process: sets the exit code and lets the event loop drain. */
export async function runCli(argv: string[], deps: CliDeps = {}): Promise<void> {
  quietOnClosedPipe();
  process.exitCode = await main(argv, deps);
}

/**
 * A reader that closes the pipe early (`| head`) makes the next write fail with EPIPE, and an unhandled
 * stream error is a stack trace. The output was wanted only that far: stop, quietly, with the code so far.
 */
function quietOnClosedPipe(): void {
  for (const stream of [process.stdout, process.stderr]) {
    stream.on('error', (error: NodeJS.ErrnoException) => {
      if (error.code !== 'EPIPE') throw error;
      process.exit(typeof process.exitCode === 'number' ? process.exitCode : 0);
    });
  }
}

export function exitCode(error: unknown): number {
  // Exit 2: what the user gave (a flag, the environment, a store this Waybill must not open) is wrong and
  // nothing was done; 1: the command ran and failed.
  if (error instanceof ConfigError || error instanceof StoreRefusedError) return 2;
  if (error instanceof WaybillError) return error.code === 'INVALID_INPUT' ? 2 : 1;
  return 1;
}

/**
 * Global flags may come before the command (`waybill --db URL runs`); they are handed to the command,
 * whose own strict parse accepts them, so they may come after it too.
 */
function split(argv: string[]): { command: string | undefined; args: string[] } {
  const leading: string[] = [];
  let i = 0;
  for (; i < argv.length && argv[i]!.startsWith('-'); i++) {
    const flag = argv[i]!;
    if (flag === '--db' || flag === '--as') {
      if (argv[i + 1] === undefined) throw new UsageError(`option '${flag} <value>' argument missing`);
      leading.push(flag, argv[++i]!);
    } else if (flag === '--version' || flag === '-V') {
      return { command: 'version', args: [] };
    } else if (
      flag.startsWith('--db=') ||
      flag.startsWith('--as=') ||
      flag === '--json' ||
      flag === '--help' ||
      flag === '-h'
    ) {
      leading.push(flag);
    } else {
      throw new UsageError(`unknown option '${flag}' before the command`);
    }
  }
  const command = argv[i];
  if (command === undefined && leading.some((f) => f === '--help' || f === '-h')) return { command: 'help', args: [] };
  return { command, args: [...leading, ...argv.slice(i + 1)] };
}

/**
 * lib/control names a wrong field by the operation's name for it (`reason`, `olderThan`); the CLI's user gave
 * it as a flag, so the line names the flag (`--reason`, `--older-than`).
 */
const FLAG_OF: Record<string, string> = {
  reason: '--reason',
  olderThan: '--older-than',
  batchSize: '--batch-size',
  result: '--result',
  note: '--note',
  id: '--id',
  input: '--input',
  runId: 'run id',
  actor: '--actor',
  action: '--action',
  since: '--since',
  until: '--until',
  limit: '--limit',
  before: '--before',
};

function asFlags(error: ControlInputError): string {
  const [field, messages] = Object.entries(error.fields)[0] ?? [];
  if (field === undefined || messages === undefined) return error.message;
  return `${FLAG_OF[field] ?? field}: ${messages[0]}`;
}

function oneLine(text: string): string {
  return text.replace(/\s*\n\s*/g, ' ').trim();
}
