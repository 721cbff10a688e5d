/**
 * The workflow the throughput bench's workers serve (`waybill worker --workflows bench/throughput-workflow.ts`):
 * runAgent over `steps` positions, a side effect that costs nothing, exactly as the single-run bench
 * (workload.ts) drives it, so what 64 of them measure is what the worker and the store add per step.
 */
import { z } from 'zod';
import { runAgent } from '../lib/checkpoint/agent';
import { defineWorkflow } from '../lib/engine/workflow';
import { sideEffect } from './workload';

export const THROUGHPUT_WORKFLOW = 'bench-zero-cost';

export const benchZeroCost = defineWorkflow({
  name: THROUGHPUT_WORKFLOW,
  description: 'Benchmark: runAgent over `steps` positions; each step returns its position and costs nothing.',
  input: z.strictObject({ steps: z.number().int().min(1).max(1_000_000) }),
  totalSteps: (input) => input.steps,
  run: (ctx, input) =>
    runAgent(
      Array.from({ length: input.steps }, (_, n) => n),
      ctx,
      sideEffect,
    ),
});
