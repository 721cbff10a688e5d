/**
 * The body of POST /api/v1/runs/{id}/tokens: how long the run token lives. Checked here as text only, for the
 * OpenAPI document and the 400 before anything is read; lib/control/tokens.ts checks the duration itself.
 */
import { z } from 'zod';

export const tokenBody = z
  .strictObject({
    ttl: z
      .string({ error: 'must be a duration such as 24h' })
      .max(32, 'must be at most 32 characters')
      .optional()
      .describe('how long the token lives: a whole number and s, m, h, d or w (default 24h, at most 30d)'),
  })
  .optional();
