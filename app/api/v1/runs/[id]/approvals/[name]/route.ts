/**
 * POST /api/v1/runs/{id}/approvals/{name} — approve or reject the run's wait `name` → { wait }.
 * Body { "approve": true|false, "note"?: "…" } (a note is required to reject). 409 CONFLICT when the wait was
 * already decided (by anyone, at any time: the first decision stands); 404 when the run does not wait for it.
 */

import { body, handle, json, param, refused } from '@/lib/api';
import { runRef } from '@/lib/api/ids';
import { otherMethods } from '@/lib/api/methods';
import { approvalBody, waitNameParam } from '@/lib/api/waits';
import { authorizeRequest } from '@/lib/auth/server';
import { config } from '@/lib/config';
import { authorize, waits } from '@/lib/control';
import { callerOf, controlDeps } from '@/lib/data/control';
import { ApiError } from '@/lib/errors';

export async function POST(request: Request, context: { params: Promise<{ id: string; name: string }> }) {
  return handle(request, async () => {
    const { who, refusal } = await authorizeRequest(request, 'viewer', { mutation: true });
    if (refusal) return refused(refusal);
    const caller = callerOf(who, 'api');
    authorize(caller, 'operator');
    const params = await context.params;
    const id = param(params.id, 'id', runRef);
    const name = param(params.name, 'name', waitNameParam);
    const given = await body(request, approvalBody, config().WAYBILL_MAX_BODY_BYTES);
    if (!given)
      throw new ApiError('INVALID_INPUT', 'body: must be { "approve": true|false, "note"?: "…" }', {
        approve: ['is required'],
      });
    const wait = await waits.decide(controlDeps(), caller, {
      runId: id,
      name,
      approve: given.approve,
      note: given.note,
    });
    return json({ wait: waits.waitView(wait) });
  });
}

/** Every other method: 405 METHOD_NOT_ALLOWED with Allow; OPTIONS: 204 with Allow (lib/api/methods.ts). */
export const { GET, HEAD, PUT, PATCH, DELETE, OPTIONS } = otherMethods(
  '/api/v1/runs/{id}/approvals/{name}',
  authorizeRequest,
);
