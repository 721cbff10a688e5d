// Your own workflow, served by a worker:
//   npx waybill worker --workflows ./workflows.mjs
//   npx waybill start digest --id digest-1 --input '{"pages": 5}'
// Each step is a side effect handed its idempotency key; here it appends the key to effects.log (in the
// worker's directory), where a real one would send it on as an Idempotency-Key header.
import { appendFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { defineWorkflow } from 'waybill';
import { z } from 'zod';

async function summarizePage(n, { idempotencyKey, signal }) {
  await sleep(Number(process.env.STEP_MS ?? 100), undefined, { signal });
  appendFileSync('effects.log', `${idempotencyKey}\n`);
  return { page: n, summary: `summary of page ${n}` };
}

export const digest = defineWorkflow({
  name: 'digest',
  description: 'One summary per page.',
  input: z.strictObject({ pages: z.number().int().min(1).max(100).default(5).describe('how many pages') }),
  totalSteps: (input) => input.pages,
  async run(ctx, input) {
    for (let n = (await ctx.load()).step; n < input.pages; n++) {
      // The result and the progress are committed in one transaction; a committed step is never run again.
      await ctx.runOnce(`${ctx.runId}:step:${n}`, (step) => summarizePage(n, step), {
        step: n,
        progress: { step: n + 1, state: {} },
      });
    }
    return { pages: input.pages };
  },
});
