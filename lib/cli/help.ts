/**
 * What `waybill --help`, `waybill help <command>` and `waybill <command> --help` print, and the CLI reference
 * page (scripts/reference-docs.ts): all rendered from the one command table (commands.ts), so the help, the
 * docs and the router cannot disagree. Lines stay within 100 columns.
 */
import type { CommandSpec } from './commands';

export const WIDTH = 100;

const BULK_FLAGS: [string, string][] = [
  ['--all-matching', 'act on every run the filters below match (as `waybill runs` filters)'],
  ['--status S, --waiting KIND, --workflow W, --search Q, --tag T, --meta K=V', 'the filters'],
  ['--reason TEXT', 'recorded in the audit log for each run'],
  ['--yes', 'do it; without it only the number of matching runs is printed'],
];

const GLOBAL_FLAGS: [string, string][] = [
  ['--db URL', 'the store (instead of DATABASE_URL)'],
  ['--as NAME', 'who the audit log records (default cli:<OS user>)'],
  ['--json', 'one JSON document on stdout; errors as JSON on stderr'],
  ['--help, -h', 'this help'],
];

/** Word-wraps `text` to WIDTH, every line after the first indented by `indent`. */
export function wrap(text: string, indent: number, first = 0): string[] {
  const lines: string[] = [];
  let line = '';
  let room = WIDTH - first;
  for (const word of text.split(/\s+/).filter(Boolean)) {
    if (line && line.length + 1 + word.length > room) {
      lines.push(line);
      line = '';
      room = WIDTH - indent;
    }
    line = line ? `${line} ${word}` : word;
  }
  if (line) lines.push(line);
  return lines.map((l, i) => (i === 0 ? l : `${' '.repeat(indent)}${l}`));
}

function flagLines(pairs: [string, string][]): string[] {
  const width = Math.min(28, Math.max(...pairs.map(([f]) => f.length)));
  return pairs.flatMap(([flag, text]) => {
    const head = `  ${flag.padEnd(width)}  `;
    if (flag.length > width)
      return [`  ${flag}`, ...wrap(text, width + 4, 0).map((l) => `${' '.repeat(width + 4)}${l.trimStart()}`)];
    return wrap(text, head.length, head.length).map((l, i) => (i === 0 ? `${head}${l}` : l));
  });
}

/** One command's help: usage, what it does, its arguments and flags with their defaults, an example. */
export function commandHelp(name: string, spec: CommandSpec): string {
  const out = [...wrap(`usage: waybill ${spec.usage}`, 4), '', ...wrap(spec.summary, 0)];
  if (spec.details) out.push('', ...wrap(spec.details, 0));
  if (spec.args?.length) out.push('', 'arguments:', ...flagLines(spec.args));
  if (spec.flags?.length) out.push('', 'options:', ...flagLines(spec.flags));
  if (spec.bulk) out.push('', `over many runs (${name} --all-matching):`, ...flagLines(BULK_FLAGS));
  out.push('', 'global options:', ...flagLines(GLOBAL_FLAGS));
  if (spec.examples.length) out.push('', 'examples:', ...spec.examples.map((e) => `  ${e}`));
  return out.join('\n');
}

/** `waybill --help`: every command with its one-line summary. */
export function overview(commands: Record<string, CommandSpec>): string {
  const names = Object.keys(commands);
  const width = Math.max(...names.map((n) => n.length));
  const lines = names.flatMap((n) => {
    const head = `  ${n.padEnd(width)}  `;
    return wrap(commands[n]!.summary, head.length, head.length).map((l, i) => (i === 0 ? `${head}${l}` : l));
  });
  return [
    'usage: waybill <command> [options]',
    '',
    'commands:',
    ...lines,
    '',
    "`waybill help <command>` (or `waybill <command> --help`): a command's arguments, options, examples.",
    'global options: --db URL, --as NAME, --json, --help, --version',
  ].join('\n');
}
