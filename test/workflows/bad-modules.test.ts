/**
 * A workflow module that cannot be served stops `waybill worker` before it opens the store: exit 2, one line
 * on stderr naming the file and the problem, and nothing written (a store file that did not exist is not
 * even created). The same through WAYBILL_WORKFLOWS, which `npm start` and `waybill up` pass on.
 */
import { existsSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { freshDb, runCli } from '../cli/support';
import { tempDir } from '../support/tmp';
import { IMPORTS, TALLY, writeModule } from './user-module';

const one = (name: string) =>
  `export const ${name.replace(/-/g, '_')} = defineWorkflow({ name: '${name}', input: z.object({}), async run() {} });\n`;

describe('waybill worker with a bad workflow module', () => {
  it('exits 2 with one line naming the file and the problem, and writes nothing', async () => {
    const dir = tempDir('waybill-bad-modules-');
    const cases: [string, string, RegExp][] = [
      [
        'syntax.mjs',
        `export const broken = defineWorkflow({ name: 'x',\n`,
        /: failed to load: SyntaxError: Unexpected end of input \(line 6\)$/,
      ],
      [
        'throws.mjs',
        `throw new Error('no API key in the environment');\n`,
        /: failed to load: Error: no API key in the environment$/,
      ],
      [
        'empty.mjs',
        'export const answer = 42;\nexport default { name: "looks-like-one", run() {} };\n',
        /: exports no workflow \(export what defineWorkflow returns, by name or as the default export\)$/,
      ],
      [
        'twice.mjs',
        `${one('same')}export const again = defineWorkflow({ name: 'same', input: z.object({}), async run() {} });\n`,
        /: registers workflow "same" twice$/,
      ],
      ['builtin.mjs', one('notify'), /: registers workflow "notify", which is a built-in workflow's name$/],
      [
        'bad-name.mjs',
        one('Not_A_Name'),
        /: failed to load: InvalidInputError: workflow name "Not_A_Name" must be lowercase/,
      ],
    ];
    const paths = cases.map(([file, body]) => writeModule(dir.path, file, body));

    // A store that does not exist yet: a refused worker must not create it.
    const absent = dir.file('never.db');
    for (const [i, [file, , problem]] of cases.entries()) {
      const result = await runCli(['--db', `file:${absent}`, 'worker', '--workflows', paths[i]!]);
      expect(result.code, `${file}: ${result.stderr}`).toBe(2);
      expect(result.stdout).toBe('');
      const lines = result.stderr.trimEnd().split('\n');
      expect(lines, file).toHaveLength(1);
      expect(lines[0]!.startsWith(`waybill worker: ${paths[i]}: `), lines[0]).toBe(true);
      expect(lines[0]).toMatch(problem);
    }
    const missing = await runCli(['--db', `file:${absent}`, 'worker', '--workflows', './no-such-workflows.mjs']);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toBe('waybill worker: ./no-such-workflows.mjs: no such file\n');
    expect(existsSync(absent)).toBe(false);

    // An existing store: not a row changed, no worker registered. WAYBILL_WORKFLOWS is read when the flag is absent.
    const db = await freshDb();
    const before = db.dump();
    const viaEnv = await db.cli(['worker'], { env: { WAYBILL_WORKFLOWS: paths[1]! } });
    expect(viaEnv.code).toBe(2);
    expect(viaEnv.stderr).toBe(`waybill worker: ${paths[1]}: failed to load: Error: no API key in the environment\n`);
    expect(db.dump()).toEqual(before);
  });

  it('accepts a module whose workflows are a default-exported array, the same definition exported twice counted once', async () => {
    const dir = tempDir('waybill-good-module-');
    const path = writeModule(dir.path, 'list.mjs', `${TALLY}\nexport default [tally, ping];\n`);
    const { loadWorkflowModule } = await import('../../lib/engine/publish');
    expect((await loadWorkflowModule(path)).map((w) => w.name).sort()).toEqual(['ping', 'tally']);
    expect(IMPORTS).toContain('defineWorkflow');
  });
});
