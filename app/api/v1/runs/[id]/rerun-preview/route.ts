/**
 * GET /api/v1/runs/{id}/rerun-preview?from=N — what a rerun from N (a number, or a step's name) would do, said
 * before it is done: { fromStep, lastCost, letGo: { count, children, text } } (lib/control/rewind `rerunPreview`,
 * the preview the rerun dialog and `waybill rerun --dry-run` show). The children are those the rerun itself
 * would let go. A read: viewer, and nothing written. 400 naming `from` for a bad one; 409 REWIND_REFUSED, as the
 * rerun would answer, for a step beyond the last, an outside client's run, or a child still running.
 */

import { handle, json, param, query, refused } from '@/lib/api';
import { runRef } from '@/lib/api/ids';
import { otherMethods } from '@/lib/api/methods';
import { rewindCostQuery } from '@/lib/api/runs';
import { authorizeRequest } from '@/lib/auth/server';
import { rewind } from '@/lib/control';
import { rerunPreviewView } from '@/lib/control/views';
import { callerOf, controlDeps } from '@/lib/data/control';

export async function GET(request: Request, context: { params: Promise<{ id: string }> }) {
  return handle(request, async () => {
    const { who, refusal } = await authorizeRequest(request, 'viewer', { mutation: false });
    if (refusal) return refused(refusal);
    const id = param((await context.params).id, 'id', runRef);
    const { from } = query(request, rewindCostQuery);
    const preview = await rewind.rerunPreview(controlDeps(), callerOf(who, 'api'), { runId: id, fromStep: from });
    return json(rerunPreviewView(preview));
  });
}

/** Every other method: 405 METHOD_NOT_ALLOWED with Allow; OPTIONS: 204 with Allow (lib/api/methods.ts). */
export const { POST, PUT, PATCH, DELETE, OPTIONS } = otherMethods('/api/v1/runs/{id}/rerun-preview', authorizeRequest);
