/**
 * The shell blocks of README.md and docs/ (fences whose language is sh, bash, shell or console), each cut into
 * the command lines a reader would paste: comments dropped, a line ending in `\` or inside an open quote
 * joined to the next. A block's info string after the language holds its tags:
 *
 *   ```sh                                       each line run by its page's test file here (./here.ts)
 *   ```sh tested-by:test/cli/seed.test.ts       the lines no handler here runs are run by that test
 *   ```sh no-run:needs-a-pgbouncer              run by nothing, for the reason given
 *   ```sh five-minutes                          a tag a test reads its block by (SECTION_TAGS)
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));

export interface Command {
  /** The page, relative to the checkout. */
  file: string;
  /** The line of the page the command starts on. */
  line: number;
  /** The command as a shell would read it, without its comment. */
  text: string;
}

export interface Block {
  file: string;
  /** The line of the opening fence. */
  line: number;
  /** The heading the block sits under ('' before the first). */
  heading: string;
  tags: string[];
  testedBy: string[];
  noRun: string | null;
  commands: Command[];
}

/** Tags by which a test reads its own blocks, and that test. */
export const SECTION_TAGS: Record<string, string> = {
  'five-minutes': 'test/package/five-minutes.test.ts',
};

const SHELLS = new Set(['sh', 'bash', 'shell', 'console']);

export function pages(): string[] {
  const found = ['README.md'];
  const walk = (dir: string) => {
    for (const name of readdirSync(join(ROOT, dir)).sort()) {
      const path = join(dir, name);
      if (statSync(join(ROOT, path)).isDirectory()) walk(path);
      else if (name.endsWith('.md')) found.push(path);
    }
  };
  if (existsSync(join(ROOT, 'docs'))) walk('docs');
  return found;
}

export function shellBlocks(file: string): Block[] {
  const lines = readFileSync(join(ROOT, file), 'utf8').split('\n');
  const blocks: Block[] = [];
  let heading = '';
  for (let i = 0; i < lines.length; i++) {
    const fence = /^```(\S*)\s*(.*)$/.exec(lines[i]!);
    if (!fence) {
      const h = /^#{1,6} (.+)$/.exec(lines[i]!);
      if (h) heading = h[1]!;
      continue;
    }
    const start = i;
    const body: string[] = [];
    for (i++; i < lines.length && !lines[i]!.startsWith('```'); i++) body.push(lines[i]!);
    if (!SHELLS.has(fence[1]!)) continue;
    const tags = fence[2]!.split(/\s+/).filter(Boolean);
    blocks.push({
      file,
      line: start + 1,
      heading,
      tags,
      testedBy: tags.filter((t) => t.startsWith('tested-by:')).map((t) => t.slice('tested-by:'.length)),
      noRun: tags.find((t) => t.startsWith('no-run:'))?.slice('no-run:'.length) ?? null,
      commands: commandsOf(file, start + 2, body),
    });
  }
  return blocks;
}

/** The commands of a block whose first line is line `first` of the page. */
function commandsOf(file: string, first: number, body: string[]): Command[] {
  const commands: Command[] = [];
  let pending: Command | null = null;
  body.forEach((raw, n) => {
    const text = stripComment(raw);
    if (!pending && !text.trim()) return;
    pending = pending
      ? { ...pending, text: `${pending.text}\n${text}` }
      : { file, line: first + n, text: text.trimStart() };
    if (/\\$/.test(pending.text) || openQuote(pending.text)) return;
    commands.push({ ...pending, text: pending.text.replace(/\\\n\s*/g, '').trimEnd() });
    pending = null;
  });
  if (pending) commands.push(pending);
  return commands;
}

/** The line without a trailing `# comment` (a `#` outside quotes, at its start or after a space). */
function stripComment(line: string): string {
  let quote: string | null = null;
  for (let i = 0; i < line.length; i++) {
    const c = line[i]!;
    if (quote) {
      if (c === quote) quote = null;
    } else if (c === "'" || c === '"') quote = c;
    else if (c === '#' && (i === 0 || /\s/.test(line[i - 1]!))) return line.slice(0, i).trimEnd();
  }
  return line;
}

function openQuote(text: string): boolean {
  let quote: string | null = null;
  for (const c of text) {
    if (quote) {
      if (c === quote) quote = null;
    } else if (c === "'" || c === '"') quote = c;
  }
  return quote !== null;
}
