/**
 * notify: step n sends one notification into an outbox file whose receiver honours idempotency keys. It is
 * the article's step 7 — "sent an external notification, and the sandbox vanished right after" — made
 * countable: kill workers at will, then the outbox must hold exactly one `delivered` line per step; each
 * `duplicate` line is a resend the receiver refused (a worker died between delivering and committing).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { z } from 'zod';
import { type AgentReport, runAgent } from '../../checkpoint/agent';
import { contentKey } from '../../checkpoint/keys';
import { defineWorkflow, type WorkflowDefinition } from '../workflow';
import { type Delivery, outboxAt } from './outbox';
import { outboxPathSchema, resolveOutbox } from './outbox-path';

export const notifyInput = z.strictObject(
  {
    count: z
      .number({ error: 'must be a number' })
      .int('must be a whole number')
      .min(1, 'must be at least 1')
      .max(1_000_000, 'must be at most 1,000,000'),
    // Relative to the data directory: the path comes from a browser form or an API client, and the worker that
    // opens it must not be steered to any other file on its disk. Every worker resolves it against its own
    // WAYBILL_DATA_DIR, so workers on one machine share the file whatever their working directory.
    outbox: outboxPathSchema,
    latencyMs: z
      .number({ error: 'must be a number of milliseconds' })
      .int('must be a whole number of milliseconds')
      .min(0, 'must be between 0 and 60000 ms')
      .max(60_000, 'must be between 0 and 60000 ms')
      .default(0),
  },
  { error: (issue) => (issue.code === 'invalid_type' ? 'input must be an object' : undefined) },
);

export type NotifyInput = z.infer<typeof notifyInput>;

export interface NotifyOptions {
  /** The directory outbox paths are inside of (WAYBILL_DATA_DIR, see lib/config's dataDir). */
  dataDir: string;
}

export function notifyWorkflow(options: NotifyOptions): WorkflowDefinition<NotifyInput> {
  return defineWorkflow<NotifyInput>({
    name: 'notify',
    description:
      'Demo: count notifications into an outbox file that honours the idempotency key and counts duplicates.',
    input: notifyInput as z.ZodType<NotifyInput>,
    totalSteps: (input) => input.count,
    async run(ctx, input): Promise<AgentReport> {
      const outbox = outboxAt(resolveOutbox(options.dataDir, input.outbox));
      const worker = ctx.checkpoint.workerId;
      const steps = Array.from({ length: input.count }, (_, n) => n);
      return runAgent(
        steps,
        ctx,
        async (n, step): Promise<Delivery> => {
          // The slow part of a send happens before the lock: the lock only covers check-and-append.
          if (input.latencyMs > 0) await sleep(input.latencyMs, undefined, { signal: step.signal });
          return outbox.deliver({ key: step.idempotencyKey, step: n, worker }, { signal: step.signal });
        },
        { fingerprint: (n) => contentKey({ outbox: input.outbox, step: n }) },
      );
    },
  });
}
