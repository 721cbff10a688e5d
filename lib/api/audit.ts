/**
 * GET /api/v1/audit's query: the text of each filter, turned into what lib/control/audit reads. The filters,
 * their limits and the paging are lib/control's, shared with the /audit page and `waybill audit`.
 */
import { z } from 'zod';
import { AUDIT_ACTIONS, AUDIT_PAGE_MAX, parseTime, TIME_HINT } from '../control/audit';
import { queryLimit } from './validate';

const time = z.string().transform((text, ctx) => {
  const at = parseTime(text);
  if (at === null) ctx.addIssue({ code: 'custom', message: `must be ${TIME_HINT}` });
  return at ?? 0;
});

export const auditQuery = z.strictObject({
  actor: z.string().optional(),
  action: z.enum(AUDIT_ACTIONS, { error: `must be one of ${AUDIT_ACTIONS.join(', ')}` }).optional(),
  runId: z.string().optional(),
  since: time.optional(),
  until: time.optional(),
  limit: queryLimit(AUDIT_PAGE_MAX).optional(),
  before: z
    .string()
    .regex(/^\d{1,15}$/, 'must be the id a previous page gave as next')
    .transform(Number)
    .optional(),
});
