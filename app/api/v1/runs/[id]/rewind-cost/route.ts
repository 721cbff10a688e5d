/**
 * GET /api/v1/runs/{id}/rewind-cost?from=N — what the steps a rerun or fork from N (a number, or a step's name)
 * would redo cost the last time they ran: { fromStep, toStep, calls, tokens, costUsd, unpriced, text, … }
 * (lib/control/rewind `cost`, the figure the rerun and fork answers carry as lastCost). A read: viewer, and
 * nothing written. 400 naming `from` for a bad one; 409 REWIND_REFUSED, as the rewind would answer, for a
 * step beyond the last or an outside client's run.
 */

import { handle, json, param, query, refused } from '@/lib/api';
import { runRef } from '@/lib/api/ids';
import { otherMethods } from '@/lib/api/methods';
import { rewindCostQuery } from '@/lib/api/runs';
import { authorizeRequest } from '@/lib/auth/server';
import { rewind } from '@/lib/control';
import { lastCostView } from '@/lib/control/views';
import { callerOf, controlDeps } from '@/lib/data/control';

export async function GET(request: Request, context: { params: Promise<{ id: string }> }) {
  return handle(request, async () => {
    const { who, refusal } = await authorizeRequest(request, 'viewer', { mutation: false });
    if (refusal) return refused(refusal);
    const id = param((await context.params).id, 'id', runRef);
    const { from } = query(request, rewindCostQuery);
    return json(lastCostView(await rewind.cost(controlDeps(), callerOf(who, 'api'), { runId: id, fromStep: from })));
  });
}

/** Every other method: 405 METHOD_NOT_ALLOWED with Allow; OPTIONS: 204 with Allow (lib/api/methods.ts). */
export const { POST, PUT, PATCH, DELETE, OPTIONS } = otherMethods('/api/v1/runs/{id}/rewind-cost', authorizeRequest);
