/**
 * GET /api/v1/runs/{id}/steps/{n} — one step: key, every attempt, the result, and the results a rerun
 * replaced (lib/control/steps, the same view as the step page and `waybill step --json`). 404 when nothing of
 * it is recorded.
 */

import { handle, json, param, refused } from '@/lib/api';
import { runRef } from '@/lib/api/ids';
import { otherMethods } from '@/lib/api/methods';
import { stepParam } from '@/lib/api/runs';
import { authorizeRequest } from '@/lib/auth/server';
import { steps } from '@/lib/control';
import { callerOf, controlDeps } from '@/lib/data/control';

export async function GET(request: Request, context: { params: Promise<{ id: string; n: string }> }) {
  return handle(request, async () => {
    const { who, refusal } = await authorizeRequest(request, 'viewer', { mutation: false });
    if (refusal) return refused(refusal);
    const params = await context.params;
    const id = param(params.id, 'id', runRef);
    const n = param(params.n, 'n', stepParam);
    return json(await steps.read(controlDeps(), callerOf(who, 'api'), { runId: id, step: n }));
  });
}

/** Every other method: 405 METHOD_NOT_ALLOWED with Allow; OPTIONS: 204 with Allow (lib/api/methods.ts). */
export const { POST, PUT, PATCH, DELETE, OPTIONS } = otherMethods('/api/v1/runs/{id}/steps/{n}', authorizeRequest);
