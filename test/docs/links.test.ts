/**
 * Every relative link in the README and docs/ leads somewhere: the file exists, and a #anchor names a heading
 * of that file (GitHub's slugs). Moving a section between pages cannot leave a dead link behind.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

function pages(): string[] {
  const found = ['README.md', 'bench/RESULTS.md', 'examples/README.md'].filter((p) => existsSync(join(ROOT, p)));
  const walk = (dir: string) => {
    for (const name of readdirSync(join(ROOT, dir))) {
      const path = join(dir, name);
      if (statSync(join(ROOT, path)).isDirectory()) walk(path);
      else if (name.endsWith('.md')) found.push(path);
    }
  };
  if (existsSync(join(ROOT, 'docs'))) walk('docs');
  return found;
}

/** GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens. */
function slug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[`*_]/g, '')
    .replace(/[^\p{L}\p{N}\- ]/gu, '')
    .replace(/ /g, '-');
}

function anchors(file: string): Set<string> {
  const text = readFileSync(join(ROOT, file), 'utf8').replace(/```[\s\S]*?```/g, '');
  return new Set([...text.matchAll(/^#{1,6} (.+)$/gm)].map((m) => slug(m[1]!)));
}

describe('the docs', () => {
  it('have no dead relative link', () => {
    const dead: string[] = [];
    for (const page of pages()) {
      const text = readFileSync(join(ROOT, page), 'utf8').replace(/```[\s\S]*?```/g, '');
      for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        if (/^(https?:|mailto:)/.test(target!)) continue;
        const [path, anchor] = target!.split('#') as [string, string | undefined];
        const file = path === '' ? page : relative(ROOT, join(ROOT, dirname(page), path));
        if (!existsSync(join(ROOT, file))) {
          dead.push(`${page}: ${target} (no such file)`);
          continue;
        }
        if (anchor && file.endsWith('.md') && !anchors(file).has(anchor))
          dead.push(`${page}: ${target} (no such heading)`);
      }
    }
    expect(dead).toEqual([]);
  });
});
