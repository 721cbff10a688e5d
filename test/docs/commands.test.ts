/**
 * Every command of the docs' shell blocks (./fences.ts finds them) is run by a test: by the test file of its
 * page here (./page.ts runs a page's commands in its order against one store, as a reader pasting them would,
 * with the handlers of ./here.ts); by a test a block's `tested-by:` tag names, which must exist and mention
 * the command (see mentions()); or by none, for the reason a `no-run:` tag gives. A command of an untagged
 * block that no handler runs fails here, named by its page and line.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { type Command, pages, ROOT, SECTION_TAGS, shellBlocks } from './fences';
import { HERE } from './here';

const blocks = pages().flatMap(shellBlocks);

/** A test file's text and that of the modules it imports from beside it (its helpers). */
function testText(test: string): string {
  const text = readFileSync(join(ROOT, test), 'utf8');
  const helpers = [...text.matchAll(/from '(\.\/[\w./-]+)'/g)].map((m) => join(dirname(test), `${m[1]}.ts`));
  return [
    text,
    ...helpers.filter((h) => existsSync(join(ROOT, h))).map((h) => readFileSync(join(ROOT, h), 'utf8')),
  ].join('\n');
}

/**
 * Whether the tests run the command: one holds it verbatim, or reads the block's section by its heading (quoted);
 * or each part of it (`&&`) is held verbatim or as the quoted words a test hands a process: `waybill`'s
 * subcommand (another program's name and first word) and every flag name (`'seed-demo', '--runs'`). A `cd`
 * is no command.
 */
function mentions(tests: string[], command: Command, heading: string): boolean {
  const texts = tests.map(testText);
  if (texts.some((text) => text.includes(command.text) || (heading && text.includes(`"${heading}"`)))) return true;
  return command.text.split(/\s*&&\s*/).every((part) => {
    if (part.startsWith('cd ')) return true;
    const words = part.split(/\s+/).filter((w) => !/^[A-Z_]+=/.test(w) && w !== 'npx');
    const waybill = words[0] === 'waybill';
    if (waybill) words.shift();
    const named = words.filter((w, n) => n < (waybill ? 1 : 2) || w.startsWith('--'));
    return texts.some(
      (text) => text.includes(part) || (named.length > 0 && named.every((w) => text.includes(`'${w}'`))),
    );
  });
}

describe('the commands of the docs', () => {
  it('are each run by a test, or say why not', () => {
    const unrun: string[] = [];
    for (const block of blocks) {
      const where = `${block.file}:${block.line}`;
      for (const test of [...block.testedBy, ...block.tags.flatMap((t) => SECTION_TAGS[t] ?? [])]) {
        expect(() => readFileSync(join(ROOT, test)), `${where}: ${test}`).not.toThrow();
      }
      const section = block.tags.map((t) => SECTION_TAGS[t]).find(Boolean);
      if (section) {
        expect(readFileSync(join(ROOT, section), 'utf8'), `${where}: ${section} reads its block`).toContain(
          block.tags.find((t) => SECTION_TAGS[t])!,
        );
        continue;
      }
      if (block.noRun !== null) {
        expect(block.noRun, `${where}: no-run needs a reason`).toMatch(/^[a-z0-9][a-z0-9-]+$/);
        continue;
      }
      for (const command of block.commands) {
        if (HERE[block.file]?.[command.text]) continue;
        if (block.testedBy.length > 0 && mentions(block.testedBy, command, block.heading)) continue;
        unrun.push(`${command.file}:${command.line}: ${command.text}`);
      }
    }
    expect(unrun, 'untagged commands no test runs (run them here, or tag the block tested-by: or no-run:)').toEqual([]);
  });

  it('run here: each handler is a command of its page', () => {
    for (const [file, handlers] of Object.entries(HERE)) {
      const commands = blocks.filter((b) => b.file === file && !b.noRun).flatMap((b) => b.commands.map((c) => c.text));
      expect(
        Object.keys(handlers).filter((c) => !commands.includes(c)),
        file,
      ).toEqual([]);
    }
  });

  it('run here: each page by a test file of its own', () => {
    const files = readdirSync(join(ROOT, 'test/docs')).filter((f) => f.endsWith('.test.ts'));
    const runs = files.map((f) => readFileSync(join(ROOT, 'test/docs', f), 'utf8'));
    for (const page of Object.keys(HERE))
      expect(
        runs.some((t) => t.includes(`runPage('${page}'`)),
        page,
      ).toBe(true);
  });
});
