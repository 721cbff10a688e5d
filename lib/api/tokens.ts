/**
 * The body of POST /api/v1/runs/{id}/tokens: how long the run token lives (lib/auth/run-token.ts mints it).
 * The run need not exist yet: an agent's loop declares its run with the token it was given.
 */
import { z } from 'zod';
import { runTokenTtl } from '../auth/run-token';

export const tokenBody = z.strictObject({
  ttl: z.string({ error: 'must be a duration such as 24h' }).pipe(runTokenTtl).optional()
    .describe('how long the token lives: a whole number and s, m, h, d or w (default 24h, at most 30d)'),
}).optional();
