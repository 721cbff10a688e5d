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
import { COMMANDS } from './commands';
import { type CliDeps, createCli } from './context';
import { commandHelp, overview } from './help';
import { nearest } from './nearest';
import { packageVersion } from './version';

/** `waybill --help`: every command and its summary. */
export function usage(): string {
  return overview(COMMANDS);
}

/** Each command's name, summary and full help, in the table's order: the CLI reference page is made of it. */
export function commandReference(): { name: string; summary: string; help: string }[] {
  return Object.entries(COMMANDS).map(([name, spec]) => ({
    name,
    summary: spec.summary,
    help: commandHelp(name, spec),
  }));
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
    if (command === 'help' && args[0] !== undefined && !args[0].startsWith('-')) {
      const spec = known(args[0]);
      process.stdout.write(`${commandHelp(args[0], spec)}\n`);
      return 0;
    }
    if (command === undefined || command === 'help') {
      const help = command === 'help' || args.includes('--help') || args.includes('-h');
      (help ? process.stdout : process.stderr).write(`${usage()}\n`);
      return help ? 0 : 2;
    }
    const entry = known(command);
    name = `waybill ${command}`;
    if (args.includes('--help') || args.includes('-h')) {
      process.stdout.write(`${commandHelp(command, entry)}\n`);
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

/** The command's table entry; a name it does not have is refused with the nearest one it does. */
function known(command: string) {
  const entry = Object.hasOwn(COMMANDS, command) ? COMMANDS[command] : undefined;
  if (entry) return entry;
  const guess = nearest(command, Object.keys(COMMANDS));
  throw new UsageError(
    `unknown command ${JSON.stringify(command)}${guess ? `: did you mean \`waybill ${guess}\`?` : ''} (waybill --help lists them)`,
  );
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
  cron: '--cron',
  timeZone: '--tz',
  overlap: '--overlap',
  catchUp: '--catch-up',
  catchUpCap: '--catch-up-cap',
  inDoubtSeconds: '--in-doubt-seconds',
};

function asFlags(error: ControlInputError): string {
  const [field, messages] = Object.entries(error.fields)[0] ?? [];
  if (field === undefined || messages === undefined) return error.message;
  return `${FLAG_OF[field] ?? field}: ${messages[0]}`;
}

function oneLine(text: string): string {
  return text.replace(/\s*\n\s*/g, ' ').trim();
}
