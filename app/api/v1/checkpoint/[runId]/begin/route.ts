/**
 * POST /api/v1/checkpoint/{runId}/begin — { workflow, totalSteps?, input?, workerId? } → { run: { id, workflow, status, totalSteps, created } }
 * Declares the client's run, so it is listed by name with its total and can be paused and cancelled. Status
 * `running`: go on; `paused` or `cancelled`: do not start (a paused run starts again once resumed).
 * A protocol call, not an operator action: it needs the operator token (it writes) or this run's run token,
 * and is not audited.
 */

import { body, handle, json, param, refused } from '@/lib/api';
import { runRef } from '@/lib/api/ids';
import { otherMethods } from '@/lib/api/methods';
import { begin, beginBody } from '@/lib/api/protocol';
import { checkRunScope } from '@/lib/api/run-scope';
import { authorizeRequest } from '@/lib/auth/server';
import { config } from '@/lib/config';
import { claimTtlMs, getStore } from '@/lib/data/store';

export async function POST(request: Request, context: { params: Promise<{ runId: string }> }) {
  return handle(request, async () => {
    const raw = (await context.params).runId;
    const { who, refusal } = await authorizeRequest(request, 'operator', { mutation: true, run: raw });
    if (refusal) return refused(refusal);
    const runId = param(raw, 'runId', runRef);
    const given = await body(request, beginBody, config().WAYBILL_MAX_BODY_BYTES);
    const store = await getStore();
    await checkRunScope(store, who, { runId, keys: [], writes: [given.input] }, claimTtlMs());
    return json(await begin(store, runId, given));
  });
}

/** Every other method: 405 METHOD_NOT_ALLOWED with Allow; OPTIONS: 204 with Allow (lib/api/methods.ts). */
export const { GET, HEAD, PUT, PATCH, DELETE, OPTIONS } = otherMethods(
  '/api/v1/checkpoint/{runId}/begin',
  authorizeRequest,
);
