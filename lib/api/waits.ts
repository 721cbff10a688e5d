/** The bodies and path parameters of the API's decisions on a run's waits (lib/control/waits.ts decides). */
import { z } from 'zod';

export const waitNameParam = z
  .string()
  .min(1, 'must not be empty')
  .max(200, 'must be at most 200 characters')
  .refine((s) => !s.includes('\u0000'), 'must not contain NUL characters');

export const approvalBody = z.strictObject({
  approve: z.boolean({ error: 'must be true (approve) or false (reject)' }),
  note: z.string({ error: 'must be text' }).optional().describe('optional on approve; required on reject'),
});

export const signalBody = z.strictObject({
  payload: z.unknown().describe('any JSON value: what waitForSignal returns'),
});
