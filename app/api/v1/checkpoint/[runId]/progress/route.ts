/**
 * The run's map, for a client using Waybill as its checkpoint store over HTTP.
 * GET /api/v1/checkpoint/{runId}/progress — { step, state, counters, … }, or 404 when nothing was saved (start at 0).
 * PUT /api/v1/checkpoint/{runId}/progress — { "step": 7, "state": {…}, "counters"?: { "skipped": 2 } }
 */

import { body, handle, json, param, refused } from '@/lib/api';
import { runRef } from '@/lib/api/ids';
import { otherMethods } from '@/lib/api/methods';
import { loadProgress, progressBody, saveProgress } from '@/lib/api/protocol';
import { checkRunScope } from '@/lib/api/run-scope';
import { authorizeRequest } from '@/lib/auth/server';
import { config } from '@/lib/config';
import { claimTtlMs, getStore } from '@/lib/data/store';

type Context = { params: Promise<{ runId: string }> };

export async function GET(request: Request, context: Context) {
  return handle(request, async () => {
    const raw = (await context.params).runId;
    const { who, refusal } = await authorizeRequest(request, 'viewer', { mutation: false, run: raw });
    if (refusal) return refused(refusal);
    const runId = param(raw, 'runId', runRef);
    const store = await getStore();
    await checkRunScope(store, who, { runId, keys: [] }, claimTtlMs());
    return json(await loadProgress(store, runId));
  });
}

export async function PUT(request: Request, context: Context) {
  return handle(request, async () => {
    const raw = (await context.params).runId;
    const { who, refusal } = await authorizeRequest(request, 'operator', { mutation: true, run: raw });
    if (refusal) return refused(refusal);
    const runId = param(raw, 'runId', runRef);
    const given = await body(request, progressBody, config().WAYBILL_MAX_BODY_BYTES);
    const store = await getStore();
    await checkRunScope(store, who, { runId, keys: [], writes: [given.state] }, claimTtlMs());
    return json(await saveProgress(store, runId, given));
  });
}

/** Every other method: 405 METHOD_NOT_ALLOWED with Allow; OPTIONS: 204 with Allow (lib/api/methods.ts). */
export const { POST, PATCH, DELETE, OPTIONS } = otherMethods('/api/v1/checkpoint/{runId}/progress', authorizeRequest);
