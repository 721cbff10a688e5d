/**
 * Every command of the docs' shell blocks (./fences.ts finds them) is run by a test: by this one, which
 * runs each page's commands in the page's order against one store, as a reader pasting them would; by the
 * test a block's `tested-by:` tag names, which must exist and mention the command (verbatim, or its command
 * and flag names as the quoted words a test passes to a process, or the section's heading that it reads);
 * or by none, for the reason of a `no-run:` tag. An untagged command this test does not run fails here with
 * its page and line.
" *
 * A page whose commands run here has a test file of its own that runs them (./page.ts: one store per page).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { type Command, pages, ROOT, SECTION_TAGS, shellBlocks } from './fences';
import { HERE } from './here';

const blocks = pages().flatMap(shellBlocks);

/** Whether a test file runs the command: see the header. */
function mentions(test: string, command: Command, heading: string): boolean {
  const text = readFileSync(join(ROOT, test), 'utf8');
  if (heading && text.includes(heading)) return true;
  return command.text.split(/\s*&&\s*/).every((part) => {
    if (text.includes(part)) return true;
    const words = part
      .split(/\s+/)
      .filter((w) => !/^[A-Z_]+=/.test(w) && w !== 'npx')
      .filter((w, n) => n < 2 || w.startsWith('--'));
    return words.length > 0 && words.every((w) => text.includes(`'${w}'`));
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
        if (block.testedBy.some((test) => mentions(test, command, block.heading))) continue;
        unrun.push(`${command.file}:${command.line}: ${command.text}`);
      }
    }
    expect(unrun, 'untagged commands no test runs (run them here, or tag the block tested-by: or no-run:)').toEqual(
      [],
    );
  });

  it('run here: each handler is a command of its page', () => {
    for (const [file, handlers] of Object.entries(HERE)) {
      const commands = blocks.filter((b) => b.file === file && !b.noRun).flatMap((b) => b.commands.map((c) => c.text));
      expect(Object.keys(handlers).filter((c) => !commands.includes(c)), file).toEqual([]);
    }
  });

  it('run here: each page by a test file of its own', () => {
    const files = readdirSync(join(ROOT, 'test/docs')).filter((f) => f.endsWith('.test.ts'));
    const runs = files.map((f) => readFileSync(join(ROOT, 'test/docs', f), 'utf8'));
    for (const page of Object.keys(HERE)) expect(runs.some((t) => t.includes(`runPage('${page}')`)), page).toBe(true);
  });
});
