/**
 * POST /api/v1/claims/sweep — expire every orphaned claim (optionally { "runId": "…" } for one run's, and a
 * "reason") → { expired, keys }.
 */

import { body, handle, json, refused } from '@/lib/api';
import { sweepBody } from '@/lib/api/claims';
import { otherMethods } from '@/lib/api/methods';
import { authorizeRequest } from '@/lib/auth/server';
import { config } from '@/lib/config';
import { authorize, claims } from '@/lib/control';
import { sweepView } from '@/lib/control/views';
import { callerOf, controlDeps } from '@/lib/data/control';

export async function POST(request: Request) {
  return handle(request, async () => {
    const { who, refusal } = await authorizeRequest(request, 'viewer', { mutation: true });
    if (refusal) return refused(refusal);
    const caller = callerOf(who, 'api');
    authorize(caller, 'operator'); // before the body is read; lib/control decides again
    const given = await body(request, sweepBody, config().WAYBILL_MAX_BODY_BYTES);
    return json(sweepView(await claims.sweep(controlDeps(), caller, { runId: given?.runId, reason: given?.reason })));
  });
}

/** Every other method: 405 METHOD_NOT_ALLOWED with Allow; OPTIONS: 204 with Allow (lib/api/methods.ts). */
export const { GET, HEAD, PUT, PATCH, DELETE, OPTIONS } = otherMethods('/api/v1/claims/sweep', authorizeRequest);
