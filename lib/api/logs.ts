/**
 * GET /api/v1/runs/{id}/logs's query: `after` (the seq of the last line the client has; without it, the newest
 * lines) and `limit`. Digits only, so `-1`, `1e3` and `1.5` are refused rather than read as something else.
 */
import { z } from 'zod';
import { queryLimit } from './validate';

export const LOG_PAGE_MAX = 1000;
export const LOG_PAGE_DEFAULT = 100;

const AFTER = 'must be a whole number, 0 or more: the seq of the last line you have';

export const logsQuery = z.strictObject({
  after: z
    .string()
    .regex(/^\d{1,15}$/, AFTER)
    .transform(Number)
    .optional(),
  limit: queryLimit(LOG_PAGE_MAX).optional(),
});
