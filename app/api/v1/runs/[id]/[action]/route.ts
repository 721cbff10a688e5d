/**
 * POST /api/v1/runs/{id}/{pause|resume|cancel|retry} — an operator's action on one run → { run }.
 * 409 INVALID_TRANSITION when the run's status does not allow it (retry of a running run, …).
 */
import { authorizeRequest } from '@/lib/auth/server';
import { body, handle, json, param, refused } from '@/lib/api';
import { ApiError } from '@/lib/api/errors';
import { runRef } from '@/lib/api/ids';
import { act, actionParam, RUN_ACTIONS } from '@/lib/api/runs';
import { config } from '@/lib/config';
import { audit } from '@/lib/data/audit';
import { getStore } from '@/lib/data/store';
import { z } from 'zod';

// No fields yet; an object is accepted (or no body at all) so clients may send `{}`.
const actionBody = z.strictObject({}).optional();

export async function POST(request: Request, context: { params: Promise<{ id: string; action: string }> }) {
  return handle(async () => {
    const { who, refusal } = await authorizeRequest(request, 'operator', { mutation: true });
    if (refusal) return refused(refusal);
    const params = await context.params;
    const id = param(params.id, 'id', runRef);
    const action = actionParam.safeParse(params.action);
    if (!action.success) throw new ApiError('NOT_FOUND', `no such run action ${JSON.stringify(params.action.slice(0, 64))}: one of ${RUN_ACTIONS.join(', ')}`);
    await body(request, actionBody, config().WAYBILL_MAX_BODY_BYTES);
    const run = await act(await getStore(), id, action.data, who.actor);
    await audit(who, { action: action.data, target: id, runId: id, detail: `now ${run.status}` });
    return json({ run });
  });
}
