// A workflow that waits for a person, holding no worker meanwhile:
//   npx waybill worker --workflows ./approval.mjs
//   npx waybill start refund --id refund-1 --input '{"order": "A-17", "amount": 40}'
//   npx waybill approve refund-1 review --note "fine"     # or: npx waybill reject refund-1 review --note "why"
// (or the run page's Approve / Reject, or POST /api/v1/runs/refund-1/approvals/review)
import { appendFileSync } from 'node:fs';
import { defineWorkflow, RunRejectedError } from 'waybill';
import { z } from 'zod';

export const refund = defineWorkflow({
  name: 'refund',
  description: 'Drafts a refund, waits for a person to approve it, then issues it once.',
  input: z.strictObject({ order: z.string().min(1), amount: z.number().positive() }),
  async run(ctx, input) {
    const draft = await ctx.step('draft', () => ({ order: input.order, amount: input.amount }));
    const review = await ctx.waitForApproval('review', { details: draft.result, timeoutMs: 24 * 3600_000 });
    if (!review.approved) throw new RunRejectedError(review.note ?? 'rejected'); // the run ends `rejected`
    // The payment's receiver deduplicates on the key: here, a line in refunds.log.
    await ctx.step('issue', ({ idempotencyKey }) => {
      appendFileSync('refunds.log', `${idempotencyKey} ${draft.result.order} ${draft.result.amount}\n`);
      return { issued: true };
    });
    return { approvedBy: review.by, note: review.note };
  },
});
