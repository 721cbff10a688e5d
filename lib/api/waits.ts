/** The bodies and path parameters of the API's decisions on a run's waits (lib/control/waits.ts decides). */
import { z } from 'zod';
import { waitName } from '../control/waits';
import { requiredJson } from './ids';

/** The `{name}` of /runs/{id}/approvals/{name} and /signals/{name}: the engine's rule for a wait name. */
export const waitNameParam = waitName;

export const approvalBody = z.strictObject({
  approve: z.boolean({ error: 'must be true (approve) or false (reject)' }),
  note: z.string({ error: 'must be text' }).optional().describe('optional on approve; required on reject'),
});

export const signalBody = z.strictObject({
  payload: requiredJson.describe('any JSON value (null for none): what waitForSignal returns'),
});
