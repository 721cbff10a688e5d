/**
 * POST /api/v1/runs/{id}/signals/{name} — send the signal `name` to the run → { wait }. Body { "payload": any }.
 * A signal sent before the run reaches its waitForSignal is kept and delivered there. 409 CONFLICT when the
 * signal was already sent: the first payload is the one the run gets.
 */

import { body, handle, json, param, refused } from '@/lib/api';
import { runRef } from '@/lib/api/ids';
import { otherMethods } from '@/lib/api/methods';
import { signalBody, waitNameParam } from '@/lib/api/waits';
import { authorizeRequest } from '@/lib/auth/server';
import { config } from '@/lib/config';
import { authorize, waits } from '@/lib/control';
import { callerOf, controlDeps } from '@/lib/data/control';

export async function POST(request: Request, context: { params: Promise<{ id: string; name: string }> }) {
  return handle(request, async () => {
    const { who, refusal } = await authorizeRequest(request, 'viewer', { mutation: true });
    if (refusal) return refused(refusal);
    const caller = callerOf(who, 'api');
    authorize(caller, 'operator');
    const params = await context.params;
    const id = param(params.id, 'id', runRef);
    const name = param(params.name, 'name', waitNameParam);
    const given = await body(request, signalBody, config().WAYBILL_MAX_BODY_BYTES);
    const wait = await waits.signal(controlDeps(), caller, { runId: id, name, payload: given?.payload ?? null });
    return json({ wait: waits.waitView(wait) });
  });
}

/** Every other method: 405 METHOD_NOT_ALLOWED with Allow; OPTIONS: 204 with Allow (lib/api/methods.ts). */
export const { GET, HEAD, PUT, PATCH, DELETE, OPTIONS } = otherMethods(
  '/api/v1/runs/{id}/signals/{name}',
  authorizeRequest,
);
