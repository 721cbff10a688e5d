/**
 * POST /api/v1/checkpoint/{runId}/end — { outcome: "completed" | "failed" | "stopped", error?, output?, workerId? } → { run: { id, status } }
 * How a declared client's run ended: its steps are done, it gave up, or it stopped for a pause or a cancel.
 * A protocol call, not an operator action: it needs the operator token (it writes) or this run's run token,
 * and is not audited.
 */

import { body, handle, json, param, refused } from '@/lib/api';
import { runRef } from '@/lib/api/ids';
import { otherMethods } from '@/lib/api/methods';
import { end, endBody } from '@/lib/api/protocol';
import { authorizeRequest } from '@/lib/auth/server';
import { config } from '@/lib/config';
import { getStore } from '@/lib/data/store';

export async function POST(request: Request, context: { params: Promise<{ runId: string }> }) {
  return handle(request, async () => {
    const raw = (await context.params).runId;
    const { refusal } = await authorizeRequest(request, 'operator', { mutation: true, run: raw });
    if (refusal) return refused(refusal);
    const runId = param(raw, 'runId', runRef);
    const given = await body(request, endBody, config().WAYBILL_MAX_BODY_BYTES);
    return json(await end(await getStore(), runId, given));
  });
}

/** Every other method: 405 METHOD_NOT_ALLOWED with Allow; OPTIONS: 204 with Allow (lib/api/methods.ts). */
export const { GET, HEAD, PUT, PATCH, DELETE, OPTIONS } = otherMethods(
  '/api/v1/checkpoint/{runId}/end',
  authorizeRequest,
);
