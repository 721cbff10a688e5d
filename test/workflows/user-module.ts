/**
 * A user's workflow module as a user writes it: a plain .mjs file outside the repository that imports
 * defineWorkflow and zod (here by file URL from this checkout; the installable package is another test's)
 * and exports its workflows. `tally` appends each step's idempotency key to an effects file, so a test
 * counts how often each side effect ran.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { ROOT } from '../cli/support';

/**
 * Under the suite's build (WAYBILL_BUILT=1, test/support/built-bins.ts) a module imports defineWorkflow from
 * dist/, so a worker given it can run the build too (workerEnvFor) instead of loading lib/ under tsx: about
 * 0.6 s of CPU a worker start, and the process suites start hundreds. A worker on the sources while the build
 * is stale still knows the module's workflows: they are marked with Symbol.for, whichever copy made them.
 */
const BUILT_ENGINE = join(ROOT, 'dist', 'engine.js');
const BUILT = process.env.WAYBILL_BUILT === '1' && existsSync(BUILT_ENGINE);
const WORKFLOW_URL = pathToFileURL(BUILT ? BUILT_ENGINE : join(ROOT, 'lib/engine/workflow.ts')).href;
const ZOD_URL = pathToFileURL(join(ROOT, 'node_modules/zod/index.js')).href;

export const IMPORTS = `import { appendFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { defineWorkflow } from ${JSON.stringify(WORKFLOW_URL)};
import { z } from ${JSON.stringify(ZOD_URL)};
`;

export const TALLY = `
export const tally = defineWorkflow({
  name: 'tally',
  description: 'Counts to count, one side effect per step.',
  version: 'v1.2.3',
  input: z.strictObject({
    count: z.number().int().min(1).max(500).describe('how many steps'),
    effects: z.string().min(1).describe('file each side effect appends its key to'),
    label: z.string().min(2).default('item'),
    pace: z.enum(['steady', 'brisk']).default('steady'),
    delayMs: z.number().int().min(0).max(5000).default(0),
    loud: z.boolean().default(false),
    tags: z.array(z.string()).default([]),
  }),
  totalSteps: (input) => input.count,
  async run(ctx, input) {
    const { step } = await ctx.load();
    for (let n = step; n < input.count; n++) {
      await ctx.runOnce(\`\${ctx.runId}:step:\${n}\`, async ({ idempotencyKey, signal }) => {
        if (input.delayMs > 0) await sleep(input.delayMs, undefined, { signal });
        appendFileSync(input.effects, idempotencyKey + '\\n');
        return { n, label: input.label };
      }, { step: n });
      await ctx.saveProgress(n + 1, { done: n + 1 });
    }
    return { counted: input.count };
  },
});

export const ping = defineWorkflow({
  name: 'ping',
  totalSteps: 3,
  input: z.object({}),
  async run(ctx) {
    for (let n = 0; n < 3; n++) {
      await ctx.runOnce(\`\${ctx.runId}:step:\${n}\`, () => n, { step: n });
      await ctx.saveProgress(n + 1, {});
    }
  },
});

// Not a workflow: a module's other exports are left alone.
export const helper = () => 42;
`;

const written = new Set<string>();

/** Writes `file` in dir with the imports above and `body`; returns its absolute path. */
export function writeModule(dir: string, file: string, body: string): string {
  const path = join(dir, file);
  writeFileSync(path, IMPORTS + body);
  written.add(path);
  return path;
}

/** What a `waybill worker` given `args` needs in its environment to run the build with a module written here. */
export function workerEnvFor(args: readonly string[]): Record<string, string> {
  const at = args.indexOf('--workflows');
  return BUILT && at >= 0 && written.has(args[at + 1]!) ? { WAYBILL_BUILT: 'all' } : {};
}

/** Each key in the effects file and how many times its side effect ran. */
export function effectCounts(path: string): Map<string, number> {
  const counts = new Map<string, number>();
  let text = '';
  try {
    text = readFileSync(path, 'utf8');
  } catch {
    return counts;
  }
  for (const key of text.split('\n').filter(Boolean)) counts.set(key, (counts.get(key) ?? 0) + 1);
  return counts;
}
