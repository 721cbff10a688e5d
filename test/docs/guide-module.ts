/**
 * The guide's `workflows.mjs` (its js block that starts `// workflows.mjs`), as a reader copies it into a
 * project, with the one function it leaves to the reader, `fetchPage`; and that project's node_modules:
 * `waybill` re-exporting this checkout's sources (as test/examples/project.ts does), zod linked.
 */
import { mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from './fences';

export function guideCrawlModule(): string {
  const guide = readFileSync(join(ROOT, 'docs/guide.md'), 'utf8');
  const block = /^```js\n(\/\/ workflows\.mjs\n[\s\S]*?)^```$/m.exec(guide);
  if (!block) throw new Error('docs/guide.md has no js block starting "// workflows.mjs"');
  return `${block[1]}\nasync function fetchPage(n, { idempotencyKey }) {\n  return { page: n, idempotencyKey };\n}\n`;
}

export function linkPackages(dir: string): void {
  const waybill = join(dir, 'node_modules', 'waybill');
  mkdirSync(waybill, { recursive: true });
  writeFileSync(
    join(waybill, 'package.json'),
    JSON.stringify({ name: 'waybill', type: 'module', exports: { '.': './index.ts', './engine': './engine.ts' } }),
  );
  writeFileSync(join(waybill, 'index.ts'), `export * from ${JSON.stringify(join(ROOT, 'lib/index.ts'))};\n`);
  writeFileSync(join(waybill, 'engine.ts'), `export * from ${JSON.stringify(join(ROOT, 'lib/engine/index.ts'))};\n`);
  symlinkSync(join(ROOT, 'node_modules', 'zod'), join(dir, 'node_modules', 'zod'));
}
