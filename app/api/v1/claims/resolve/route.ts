/**
 * POST /api/v1/claims/resolve — { "key": "…", "result": <any JSON>, "note"?: "…", "force"?: true, "attempt"?: n }:
 * commit a result by hand (source manual) for a claim whose side effect is in doubt; the step never runs again.
 * A claim whose lease is live, or that is no longer the `attempt` listed, is refused (409) and nothing is audited.
 */

import { body, handle, json, refused } from '@/lib/api';
import { resolveBody } from '@/lib/api/claims';
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
    const given = await body(request, resolveBody, config().WAYBILL_MAX_BODY_BYTES);
    const done = await claims.resolve(controlDeps(), caller, given);
    return json({ ...done, resolved: true });
  });
}

/** Every other method: 405 METHOD_NOT_ALLOWED with Allow; OPTIONS: 204 with Allow (lib/api/methods.ts). */
export const { GET, HEAD, PUT, PATCH, DELETE, OPTIONS } = otherMethods('/api/v1/claims/resolve', authorizeRequest);
