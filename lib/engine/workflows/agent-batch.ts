/**
 * agent-batch: the article's agent loop over a list of inputs, one model call per item. Each step is
 * claim → model call → commit, with the map written in the commit transaction (runAgent), so a worker that
 * dies anywhere resumes at the first uncommitted item and no committed item is sent to the model again.
 */
import { z } from 'zod';
import { type AgentReport, runAgent } from '../../checkpoint/agent';
import { contentKey } from '../../checkpoint/keys';
import { defineWorkflow, type WorkflowDefinition } from '../workflow';
import { type ModelClient, type ModelOutput, simulatedModel } from './model';

const MAX_STEPS = 1_000_000;
const MAX_ITEM_BYTES = 10 * 1024;
/** The input is stored as one row; keep it to a size every backend writes comfortably. */
const MAX_INPUT_BYTES = 16 * 1024 * 1024;

const item = z
  .string({ error: 'each item must be a string' })
  .refine((s) => Buffer.byteLength(s) <= MAX_ITEM_BYTES, 'each item must be at most 10 KB (10,240 bytes of UTF-8)');

export const agentBatchInput = z
  .strictObject(
    {
      items: z
        .array(item, { error: 'must be an array of strings' })
        .min(1, 'must not be empty')
        .max(MAX_STEPS, `must have at most ${MAX_STEPS.toLocaleString('en')} items`)
        .refine(
          (items) => items.reduce((n, s) => n + Buffer.byteLength(s), 0) <= MAX_INPUT_BYTES,
          'must total at most 16 MB; split the batch into several runs',
        )
        .optional(),
      count: z
        .number({ error: 'must be a number' })
        .int('must be a whole number')
        .min(1, 'must be at least 1')
        .max(MAX_STEPS, `must be at most ${MAX_STEPS.toLocaleString('en')}`)
        .optional(),
      latencyMs: z
        .number({ error: 'must be a number of milliseconds' })
        .int('must be a whole number of milliseconds')
        .min(0, 'must be between 0 and 60000 ms')
        .max(60_000, 'must be between 0 and 60000 ms')
        .default(50),
      failureRate: z
        .number({ error: 'must be a number between 0 and 1' })
        .min(0, 'must be between 0 and 1')
        .max(1, 'must be between 0 and 1')
        .default(0),
    },
    { error: (issue) => (issue.code === 'invalid_type' ? 'input must be an object' : undefined) },
  )
  .superRefine((input, ctx) => {
    if ((input.items === undefined) === (input.count === undefined)) {
      ctx.addIssue({
        code: 'custom',
        path: [input.items === undefined ? 'items' : 'count'],
        message:
          input.items === undefined
            ? 'give either items (a list of prompts) or count, not neither'
            : 'give either items or count, not both',
      });
    }
  });

export type AgentBatchInput = z.infer<typeof agentBatchInput>;

/** The prompt of step n when the run was started with a count instead of items. */
export function syntheticItem(n: number, count: number): string {
  return `Summarize item ${n + 1} of ${count}: a routine status report with nothing unusual in it.`;
}

/** The n-th prompt of a run's input. */
export function promptOf(input: AgentBatchInput, n: number): string {
  return input.items ? (input.items[n] as string) : syntheticItem(n, input.count ?? 0);
}

export function stepsOf(input: AgentBatchInput): number {
  return input.items?.length ?? input.count ?? 0;
}

export function agentBatchWorkflow(
  options: { model?: ModelClient; maxAttempts?: number } = {},
): WorkflowDefinition<AgentBatchInput> {
  return defineWorkflow<AgentBatchInput>({
    name: 'agent-batch',
    description: 'Demo: an agent loop over a list of prompts (or count synthetic ones), one model call per step.',
    input: agentBatchInput as z.ZodType<AgentBatchInput>,
    // Simulated failures are transient by design: enough attempts that failureRate 0.5 rarely fails a run.
    maxAttempts: options.maxAttempts ?? 10,
    totalSteps: stepsOf,
    async run(ctx, input): Promise<AgentReport & { model: string }> {
      // A configured endpoint wins; latencyMs and failureRate only shape the simulated model.
      const model = options.model ?? simulatedModel({ latencyMs: input.latencyMs, failureRate: input.failureRate });
      // Steps are positions, so a count of a million costs an array of small integers, not of strings.
      const steps = Array.from({ length: stepsOf(input) }, (_, n) => n);
      const report = await runAgent(
        steps,
        ctx,
        (n, step): Promise<ModelOutput> =>
          model.complete(promptOf(input, n), { idempotencyKey: step.idempotencyKey, signal: step.signal }),
        // The item is a position; what the step sends is its prompt: a run id reused with other prompts is key reuse.
        { fingerprint: (n) => contentKey(promptOf(input, n)) },
      );
      return { ...report, model: model.name };
    },
  });
}
