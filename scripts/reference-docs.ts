/**
 * The reference pages that are generated, not written: the configuration (every variable lib/config.ts
 * parses, with its doc comment and default) and the CLI (every command in lib/cli/main.ts's table). Run
 * `npx tsx scripts/reference-docs.ts` to write them, `--check` to fail when they are stale
 * (test/docs/reference.test.ts does the same, so a stale page fails CI).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { commandReference } from '../lib/cli/main';
import { parseConfig } from '../lib/config';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
export const PAGES = {
  'docs/reference/configuration.md': configurationPage,
  'docs/reference/cli.md': cliPage,
} as const;

interface Variable {
  name: string;
  doc: string;
  defaultText: string | null;
}

/** The variables of config.ts's `schema` object, in source order, with their doc comments. */
export function configVariables(): Variable[] {
  const path = join(ROOT, 'lib/config.ts');
  const source = ts.createSourceFile(path, readFileSync(path, 'utf8'), ts.ScriptTarget.Latest, true);
  const object = findSchemaObject(source);
  const defaults = parseConfig({}) as Record<string, unknown>;
  // A spread (`...TRACING`) is a group of variables declared beside the schema: its properties, in its place.
  const properties = object.properties.flatMap((p) =>
    ts.isSpreadAssignment(p) ? [...constObject(source, p.expression.getText(source)).properties] : [p],
  );
  return properties.filter(ts.isPropertyAssignment).map((p) => {
    const name = p.name.getText(source);
    return { name, doc: docOf(p, source), defaultText: defaultOf(p.initializer, source, defaults[name]) };
  });
}

/** The object literal a top-level `const NAME = {…}` of config.ts holds. */
function constObject(source: ts.SourceFile, name: string): ts.ObjectLiteralExpression {
  for (const statement of source.statements) {
    if (!ts.isVariableStatement(statement)) continue;
    for (const d of statement.declarationList.declarations)
      if (d.name.getText(source) === name && d.initializer && ts.isObjectLiteralExpression(d.initializer))
        return d.initializer;
  }
  throw new Error(`lib/config.ts: the schema spreads ${name}, which is no \`const ${name} = {...}\``);
}

function findSchemaObject(source: ts.SourceFile): ts.ObjectLiteralExpression {
  let found: ts.ObjectLiteralExpression | undefined;
  const visit = (node: ts.Node): void => {
    if (found) return;
    if (ts.isVariableDeclaration(node) && node.name.getText(source) === 'schema') {
      const walk = (n: ts.Node): void => {
        if (found) return;
        if (ts.isCallExpression(n) && n.expression.getText(source).replace(/\s/g, '') === 'z.object') {
          const [arg] = n.arguments;
          if (arg && ts.isObjectLiteralExpression(arg)) found = arg;
          return;
        }
        ts.forEachChild(n, walk);
      };
      walk(node);
      return;
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  if (!found) throw new Error('lib/config.ts: no `const schema = z.object({...})` found');
  return found;
}

function docOf(node: ts.Node, source: ts.SourceFile): string {
  const ranges = ts.getLeadingCommentRanges(source.text, node.getFullStart()) ?? [];
  const docs = ranges
    .map((r) => source.text.slice(r.pos, r.end))
    .filter((text) => text.startsWith('/**'))
    .map((text) =>
      text
        .replace(/^\/\*\*/, '')
        .replace(/\*\/$/, '')
        .split('\n')
        .map((line) => line.replace(/^\s*\* ?/, '').trim())
        .filter(Boolean)
        .join(' '),
    );
  return docs.join(' ').replace(/\|/g, '\\|');
}

/**
 * The default as a reader should see it: the parsed value, unless the source computes it from the machine
 * (`Math.min(2, availableParallelism())`), which is shown as written so the page is the same everywhere.
 */
function defaultOf(initializer: ts.Expression, source: ts.SourceFile, parsed: unknown): string | null {
  let call: ts.CallExpression | undefined;
  const walk = (n: ts.Node): void => {
    if (ts.isCallExpression(n) && ts.isPropertyAccessExpression(n.expression) && n.expression.name.text === 'default')
      call = n;
    ts.forEachChild(n, walk);
  };
  walk(initializer);
  if (!call) return null;
  const text = call.arguments[0]?.getText(source) ?? '';
  if (/\(/.test(text)) return text.replace(/^Math\./, '');
  if (initializer.getText(source).startsWith('durationSchema') && typeof parsed === 'number') return duration(parsed);
  return typeof parsed === 'string' ? parsed : JSON.stringify(parsed);
}

/** A duration setting's default as the user would write it (`24h`, `30d`). */
function duration(ms: number): string {
  const units: [string, number][] = [
    ['d', 86_400_000],
    ['h', 3_600_000],
    ['m', 60_000],
    ['s', 1000],
  ];
  for (const [unit, size] of units) if (ms % size === 0) return `${ms / size}${unit}`;
  return `${ms}ms`;
}

export function configurationPage(): string {
  const rows = configVariables().map(
    (v) => `| \`${v.name}\` | ${v.defaultText === null ? '—' : `\`${v.defaultText}\``} | ${v.doc || '—'} |`,
  );
  return [
    '# Configuration reference',
    '',
    '<!-- Generated from lib/config.ts by scripts/reference-docs.ts; do not edit by hand. -->',
    '',
    'Every setting is an environment variable, read once by `lib/config.ts` and validated at start: a bad value',
    'stops the process with one line naming the variable, before anything is opened or written.',
    '',
    '| variable | default | meaning |',
    '|---|---|---|',
    ...rows,
    '',
  ].join('\n');
}

export function cliPage(): string {
  const sections = commandReference().map((c) =>
    [`## \`waybill ${c.name}\``, '', c.summary, '', '```', c.help, '```', ''].join('\n'),
  );
  return [
    '# CLI reference',
    '',
    '<!-- Generated from lib/cli/main.ts by scripts/reference-docs.ts; do not edit by hand. -->',
    '',
    '`waybill --help` lists the commands, `waybill help <command>` (or `waybill <command> --help`) shows one.',
    '',
    ...sections,
  ].join('\n');
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const check = process.argv.includes('--check');
  let stale = 0;
  for (const [file, page] of Object.entries(PAGES)) {
    const path = join(ROOT, file);
    const want = page();
    let have = '';
    try {
      have = readFileSync(path, 'utf8');
    } catch {}
    if (have === want) continue;
    if (check) {
      process.stderr.write(`${file} is stale: run npx tsx scripts/reference-docs.ts\n`);
      stale++;
    } else {
      writeFileSync(path, want);
      process.stdout.write(`wrote ${file}\n`);
    }
  }
  process.exitCode = stale ? 1 : 0;
}
