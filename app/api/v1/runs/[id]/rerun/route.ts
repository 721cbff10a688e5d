/**
 * POST /api/v1/runs/{id}/rerun — { fromStep, input?, reason? } → { run, moved, rerun, fromStep, state, stateStep }:
 * the run's committed results from fromStep (a number, or a step's name) on move to history, its saved state
 * goes back to what it was at that step, and the run is queued again (lib/control/rewind). 409
 * REWIND_REFUSED, nothing changed: running (pause first), a live claim, fromStep beyond the last step, an
 * outside client's run. 400 naming the field for a bad body or an input that does not fit the workflow.
 */

import { body, handle, json, param, refused } from '@/lib/api';
import { runRef } from '@/lib/api/ids';
import { otherMethods } from '@/lib/api/methods';
import { rerunBody } from '@/lib/api/runs';
import { authorizeRequest } from '@/lib/auth/server';
import { config } from '@/lib/config';
import { authorize, rewind } from '@/lib/control';
import { rerunAnswer } from '@/lib/control/views';
import { callerOf, controlDeps } from '@/lib/data/control';

export async function POST(request: Request, context: { params: Promise<{ id: string }> }) {
  return handle(request, async () => {
    const { who, refusal } = await authorizeRequest(request, 'viewer', { mutation: true });
    if (refusal) return refused(refusal);
    const caller = callerOf(who, 'api');
    authorize(caller, 'operator');
    const id = param((await context.params).id, 'id', runRef);
    const given = await body(request, rerunBody, config().WAYBILL_MAX_BODY_BYTES);
    const outcome = await rewind.rerun(controlDeps(), caller, { runId: id, ...given });
    return json(rerunAnswer(outcome));
  });
}

/** Every other method: 405 METHOD_NOT_ALLOWED with Allow; OPTIONS: 204 with Allow (lib/api/methods.ts). */
export const { GET, HEAD, PUT, PATCH, DELETE, OPTIONS } = otherMethods('/api/v1/runs/{id}/rerun', authorizeRequest);
