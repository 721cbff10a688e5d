/**
 * POST /api/v1/runs/{id}/{pause|resume|cancel|retry} — an operator's action on one run → { run }.
 * Optional body { "reason"?: "…" }, kept in the audit line.
 * 409 INVALID_TRANSITION when the run's status does not allow it (retry of a running run, …).
 */

import { body, handle, json, param, refused } from '@/lib/api';
import { runRef } from '@/lib/api/ids';
import { otherMethods } from '@/lib/api/methods';
import { actionBody, actionParam, RUN_ACTIONS } from '@/lib/api/runs';
import { authorizeRequest } from '@/lib/auth/server';
import { config } from '@/lib/config';
import { authorize, runs } from '@/lib/control';
import { judgeRun } from '@/lib/control/queued';
import { stallSettings } from '@/lib/control/stalled';
import { runView } from '@/lib/control/views';
import { callerOf, controlDeps } from '@/lib/data/control';
import { getStore } from '@/lib/data/store';
import { ApiError } from '@/lib/errors';

export async function POST(request: Request, context: { params: Promise<{ id: string; action: string }> }) {
  return handle(request, async () => {
    const { who, refusal } = await authorizeRequest(request, 'viewer', { mutation: true });
    if (refusal) return refused(refusal);
    const caller = callerOf(who, 'api');
    authorize(caller, 'operator'); // before anything is read; lib/control decides again
    const params = await context.params;
    const id = param(params.id, 'id', runRef);
    const action = actionParam.safeParse(params.action);
    if (!action.success)
      throw new ApiError(
        'NOT_FOUND',
        `no such run action ${JSON.stringify(params.action.slice(0, 64))}: one of ${RUN_ACTIONS.join(', ')}`,
      );
    const given = await body(request, actionBody, config().WAYBILL_MAX_BODY_BYTES);
    const run = await runs.act(controlDeps(), caller, { action: action.data, runId: id, reason: given?.reason });
    const { stall, queuedReason } = await judgeRun(await getStore(), run, stallSettings(config()));
    return json({ run: runView(run, false, stall, queuedReason) });
  });
}

/** Every other method: 405 METHOD_NOT_ALLOWED with Allow; OPTIONS: 204 with Allow (lib/api/methods.ts). */
export const { GET, HEAD, PUT, PATCH, DELETE, OPTIONS } = otherMethods('/api/v1/runs/{id}/{action}', authorizeRequest);
