/** The body and answer of POST /api/v1/events. The fields' rules are lib/control/events', so every edge refuses alike. */
import { z } from 'zod';
import { emitInput } from '../control/events';

export const emitBody = emitInput;

const epoch = z.number().describe('epoch seconds');

export const emittedSchema = z.strictObject({
  event: z.strictObject({ id: z.string(), name: z.string(), data: z.unknown(), createdAt: epoch }),
  recorded: z.boolean().describe('false: the event was there already under this id, and nothing new was recorded'),
  runs: z
    .array(z.strictObject({ workflow: z.string(), runId: z.string(), existed: z.boolean() }))
    .describe('one run per subscribed workflow, `<workflow>:event:<id>`'),
  refused: z
    .array(z.strictObject({ workflow: z.string(), message: z.string() }))
    .describe('subscribed workflows whose input the data is not'),
  woke: z.array(z.string()).describe('runs this send woke from a wait for the event'),
});
