/**
 * GET /api/v1/runs/{id}/committed — the run's committed results in step order: ?limit= (≤ 1000) &cursor=
 */

import { handle, json, param, query, refused } from '@/lib/api';
import { runRef } from '@/lib/api/ids';
import { otherMethods } from '@/lib/api/methods';
import { checkRunScope } from '@/lib/api/run-scope';
import { committedQuery, listCommitted } from '@/lib/api/runs';
import { authorizeRequest } from '@/lib/auth/server';
import { claimTtlMs, getStore } from '@/lib/data/store';

export async function GET(request: Request, context: { params: Promise<{ id: string }> }) {
  return handle(request, async () => {
    // A run token may read its own run's committed results (a resuming agent's only read besides progress).
    const raw = (await context.params).id;
    const { who, refusal } = await authorizeRequest(request, 'viewer', { mutation: false, run: raw });
    if (refusal) return refused(refusal);
    const id = param(raw, 'id', runRef);
    const store = await getStore();
    await checkRunScope(store, who, { runId: id, keys: [] }, claimTtlMs());
    return json(await listCommitted(store, id, query(request, committedQuery), claimTtlMs()));
  });
}

/** Every other method: 405 METHOD_NOT_ALLOWED with Allow; OPTIONS: 204 with Allow (lib/api/methods.ts). */
export const { POST, PUT, PATCH, DELETE, OPTIONS } = otherMethods('/api/v1/runs/{id}/committed', authorizeRequest);
