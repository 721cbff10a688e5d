/**
 * POST /api/v1/runs/bulk — one action over every run a filter matches, or over a selection:
 * { "action": "pause"|"resume"|"cancel"|"retry"|"rerun", "filter": { "status"?, "workflow"?, "q"? } | "ids": […],
 *   "fromStep"?: N | "name" (rerun only, and required), "reason"?: "…" }
 * → { matched, done, skipped: [{ id, reason }] }. The filters are GET /api/v1/runs's; one audit line per run.
 * 400 for bad input or a filter matching more than 10,000 runs (nothing is changed).
 */

import { body, handle, json, refused } from '@/lib/api';
import { otherMethods } from '@/lib/api/methods';
import { bulkBody } from '@/lib/api/runs';
import { authorizeRequest } from '@/lib/auth/server';
import { config } from '@/lib/config';
import { authorize, bulk } from '@/lib/control';
import { callerOf, controlDeps } from '@/lib/data/control';

export async function POST(request: Request) {
  return handle(request, async () => {
    const { who, refusal } = await authorizeRequest(request, 'viewer', { mutation: true });
    if (refusal) return refused(refusal);
    const caller = callerOf(who, 'api');
    authorize(caller, 'operator'); // before the body is read; lib/control decides again
    const given = await body(request, bulkBody, config().WAYBILL_MAX_BODY_BYTES);
    return json(await bulk.apply(controlDeps(), caller, given));
  });
}

/** Every other method: 405 METHOD_NOT_ALLOWED with Allow; OPTIONS: 204 with Allow (lib/api/methods.ts). */
export const { GET, HEAD, PUT, PATCH, DELETE, OPTIONS } = otherMethods('/api/v1/runs/bulk', authorizeRequest);
