/**
 * The guide's `workflows.mjs` (its js block that starts `// workflows.mjs`), as a reader copies it into a
 * project, with the one function it leaves to the reader, `fetchPage`; and that project's node_modules:
 * `waybill` re-exporting this checkout's sources (as test/examples/project.ts does), zod linked.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { linkCheckoutPackages } from '../examples/project';
import { ROOT } from './fences';

export function guideCrawlModule(): string {
  const guide = readFileSync(join(ROOT, 'docs/guide.md'), 'utf8');
  const block = /^```js\n(\/\/ workflows\.mjs\n[\s\S]*?)^```$/m.exec(guide);
  if (!block) throw new Error('docs/guide.md has no js block starting "// workflows.mjs"');
  return `${block[1]}\nasync function fetchPage(n, { idempotencyKey }) {\n  return { page: n, idempotencyKey };\n}\n`;
}

export function linkPackages(dir: string): void {
  linkCheckoutPackages(dir, ['zod']);
}
