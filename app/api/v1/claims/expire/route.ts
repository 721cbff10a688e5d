/**
 * POST /api/v1/claims/expire — { "key": "…", "force"?: true, "reason"?: "…" }: give up on a claim, so its step
 * runs again. 404 when there is no claim on the key; 409 when its lease is live and force is not set.
 */

import { body, handle, json, refused } from '@/lib/api';
import { expireBody } from '@/lib/api/claims';
import { otherMethods } from '@/lib/api/methods';
import { authorizeRequest } from '@/lib/auth/server';
import { config } from '@/lib/config';
import { authorize, claims } from '@/lib/control';
import { callerOf, controlDeps } from '@/lib/data/control';

export async function POST(request: Request) {
  return handle(request, async () => {
    const { who, refusal } = await authorizeRequest(request, 'viewer', { mutation: true });
    if (refusal) return refused(refusal);
    const caller = callerOf(who, 'api');
    authorize(caller, 'operator'); // before the body is read; lib/control decides again
    const given = await body(request, expireBody, config().WAYBILL_MAX_BODY_BYTES);
    const done = await claims.expire(controlDeps(), caller, given);
    return json({ ...done, expired: true });
  });
}

/** Every other method: 405 METHOD_NOT_ALLOWED with Allow; OPTIONS: 204 with Allow (lib/api/methods.ts). */
export const { GET, HEAD, PUT, PATCH, DELETE, OPTIONS } = otherMethods('/api/v1/claims/expire', authorizeRequest);
