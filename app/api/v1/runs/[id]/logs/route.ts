/**
 * GET /api/v1/runs/{id}/logs — the lines the run's program printed, oldest first: ?after=SEQ (the next page,
 * or a follower's new lines) &limit= (≤ 1000, default 100). Without `after`, the newest lines. `next` is the
 * `after` of the following page. Viewers and operators; a run token is refused (the protocol only).
 */

import { handle, json, param, query, refused } from '@/lib/api';
import { runRef } from '@/lib/api/ids';
import { LOG_PAGE_DEFAULT, logsQuery } from '@/lib/api/logs';
import { otherMethods } from '@/lib/api/methods';
import { authorizeRequest } from '@/lib/auth/server';
import { logs } from '@/lib/control';
import { getStore } from '@/lib/data/store';

export async function GET(request: Request, context: { params: Promise<{ id: string }> }) {
  return handle(request, async () => {
    const { refusal } = await authorizeRequest(request, 'viewer', { mutation: false });
    if (refusal) return refused(refusal);
    const id = param((await context.params).id, 'id', runRef);
    const q = query(request, logsQuery);
    return json(await logs.readRunLog(await getStore(), id, { after: q.after, limit: q.limit ?? LOG_PAGE_DEFAULT }));
  });
}

/** Every other method: 405 METHOD_NOT_ALLOWED with Allow; OPTIONS: 204 with Allow (lib/api/methods.ts). */
export const { POST, PUT, PATCH, DELETE, OPTIONS } = otherMethods('/api/v1/runs/{id}/logs', authorizeRequest);
