/**
 * The generated reference pages match the code they are generated from: a variable added to lib/config.ts or
 * a command to the CLI's table without `npx tsx scripts/reference-docs.ts` fails here.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { configVariables, PAGES } from '../../scripts/reference-docs';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

describe('the generated reference pages', () => {
  it.each(Object.entries(PAGES))('%s is current', (file, page) => {
    expect(readFileSync(join(ROOT, file), 'utf8'), `${file} is stale: run npx tsx scripts/reference-docs.ts`).toBe(
      page(),
    );
  });

  it('documents every configuration variable', () => {
    const undocumented = configVariables()
      .filter((v) => v.doc === '')
      .map((v) => v.name);
    expect(undocumented).toEqual([]);
  });
});
