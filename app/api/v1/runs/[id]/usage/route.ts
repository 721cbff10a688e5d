/**
 * GET /api/v1/runs/{id}/usage — the run's model calls through the gateway, summed: calls, tokens in, out and
 * cached, cost in USD and how many calls were unpriced, in total, by step and by model (lib/control/usage,
 * the ledger `waybill inspect` prints). 404 for a run the store knows nothing of.
 */

import { handle, json, param, refused } from '@/lib/api';
import { runRef } from '@/lib/api/ids';
import { otherMethods } from '@/lib/api/methods';
import { authorizeRequest } from '@/lib/auth/server';
import { usage } from '@/lib/control';
import { callerOf, controlDeps } from '@/lib/data/control';

export async function GET(request: Request, context: { params: Promise<{ id: string }> }) {
  return handle(request, async () => {
    const { who, refusal } = await authorizeRequest(request, 'viewer', { mutation: false });
    if (refusal) return refused(refusal);
    const id = param((await context.params).id, 'id', runRef);
    return json(await usage.ofRun(controlDeps(), callerOf(who, 'api'), { runId: id }));
  });
}

/** Every other method: 405 METHOD_NOT_ALLOWED with Allow; OPTIONS: 204 with Allow (lib/api/methods.ts). */
export const { POST, PUT, PATCH, DELETE, OPTIONS } = otherMethods('/api/v1/runs/{id}/usage', authorizeRequest);
