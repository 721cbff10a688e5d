/**
 * review-and-send: the approval gate in front of a side effect. It drafts a message with the model (the
 * simulated one unless a real endpoint is configured), parks at `review` with the draft as the details the
 * approver reads, and on approval delivers it to an outbox whose receiver honours idempotency keys — so the
 * message goes out exactly once whatever dies when. On rejection the run ends `rejected` with the note, and
 * nothing is sent. Every input field is optional: `waybill start review-and-send --input '{}'` works.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { z } from 'zod';
import { RunRejectedError } from '../../errors';
import { defineWorkflow, type WorkflowDefinition } from '../workflow';
import { type ModelClient, simulatedModel } from './model';
import { outboxAt } from './outbox';
import { outboxPathSchema, resolveOutbox } from './outbox-path';

export const reviewAndSendInput = z.strictObject(
  {
    to: z
      .string({ error: 'must be text' })
      .min(1, 'must not be empty')
      .max(200, 'must be at most 200 characters')
      .default('customer@example.com'),
    topic: z
      .string({ error: 'must be text' })
      .min(1, 'must not be empty')
      .max(2000, 'must be at most 2000 characters')
      .default('your refund of order 1042 has been approved'),
    outbox: outboxPathSchema.default('review-and-send.jsonl'),
    /** How long the approval may wait; unset, it waits as long as it takes. A timeout rejects. */
    timeoutMs: z
      .number({ error: 'must be a number of milliseconds' })
      .int('must be a whole number')
      .min(1, 'must be at least 1')
      .max(365 * 24 * 3600 * 1000, 'must be at most a year')
      .optional(),
    /** Time the send takes before it reaches the receiver (the crash tests kill workers inside it). */
    latencyMs: z
      .number({ error: 'must be a number of milliseconds' })
      .int('must be a whole number')
      .min(0, 'must be between 0 and 60000 ms')
      .max(60_000, 'must be between 0 and 60000 ms')
      .default(0),
  },
  { error: (issue) => (issue.code === 'invalid_type' ? 'input must be an object' : undefined) },
);

export type ReviewAndSendInput = z.infer<typeof reviewAndSendInput>;

export function reviewAndSendWorkflow(options: {
  dataDir: string;
  model?: ModelClient;
}): WorkflowDefinition<ReviewAndSendInput> {
  return defineWorkflow<ReviewAndSendInput>({
    name: 'review-and-send',
    description: 'Demo: draft a message with the model, wait for a person to approve it, then send it exactly once.',
    input: reviewAndSendInput as unknown as z.ZodType<ReviewAndSendInput>,
    totalSteps: 2,
    async run(ctx, input) {
      const model = options.model ?? simulatedModel();
      const draft = await ctx.step(
        'draft',
        (step) =>
          model.complete(`Write a short message to ${input.to}: ${input.topic}`, {
            idempotencyKey: step.idempotencyKey,
            signal: step.signal,
          }),
        { step: 0 },
      );
      const review = await ctx.waitForApproval('review', {
        details: { to: input.to, message: draft.result.text, model: draft.result.model },
        timeoutMs: input.timeoutMs,
        onTimeout: 'reject',
      });
      if (!review.approved)
        throw new RunRejectedError(review.note ?? (review.timedOut ? 'the approval timed out' : 'rejected'));
      const outbox = outboxAt(resolveOutbox(options.dataDir, input.outbox));
      const sent = await ctx.step(
        'send',
        async (step) => {
          if (input.latencyMs > 0) await sleep(input.latencyMs, undefined, { signal: step.signal });
          return outbox.deliver(
            { key: step.idempotencyKey, step: 1, worker: ctx.checkpoint.workerId },
            { signal: step.signal },
          );
        },
        { step: 1 },
      );
      return { to: input.to, approvedBy: review.by, note: review.note, delivered: sent.result.key };
    },
  });
}
