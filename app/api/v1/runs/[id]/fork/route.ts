/**
 * POST /api/v1/runs/{id}/fork — { fromStep, id?, input?, reason? } → 201 { run, copied, fromStep, state, stateStep }: a new queued run whose
 * steps before fromStep are copied from this one (source `forked`); this run is not written. 409 REWIND_REFUSED
 * or CONFLICT (the new id is taken), nothing changed; 400 naming the field for a bad body or input.
 */

import { body, handle, json, param, refused } from '@/lib/api';
import { runRef } from '@/lib/api/ids';
import { otherMethods } from '@/lib/api/methods';
import { forkBody } from '@/lib/api/runs';
import { authorizeRequest } from '@/lib/auth/server';
import { config } from '@/lib/config';
import { authorize, rewind } from '@/lib/control';
import { forkAnswer } from '@/lib/control/views';
import { callerOf, controlDeps } from '@/lib/data/control';

export async function POST(request: Request, context: { params: Promise<{ id: string }> }) {
  return handle(request, async () => {
    const { who, refusal } = await authorizeRequest(request, 'viewer', { mutation: true });
    if (refusal) return refused(refusal);
    const caller = callerOf(who, 'api');
    authorize(caller, 'operator');
    const id = param((await context.params).id, 'id', runRef);
    const given = await body(request, forkBody, config().WAYBILL_MAX_BODY_BYTES);
    const outcome = await rewind.fork(controlDeps(), caller, { runId: id, ...given });
    return json(forkAnswer(outcome), 201);
  });
}

/** Every other method: 405 METHOD_NOT_ALLOWED with Allow; OPTIONS: 204 with Allow (lib/api/methods.ts). */
export const { GET, HEAD, PUT, PATCH, DELETE, OPTIONS } = otherMethods('/api/v1/runs/{id}/fork', authorizeRequest);
