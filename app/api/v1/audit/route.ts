/**
 * GET /api/v1/audit — the operators' log, newest first: ?actor= &action= &runId= (exact) &since= &until=
 * (epoch seconds or ISO 8601; since ≤ at < until) &limit= (≤ 500) &before= (the `next` of the page before)
 * → { entries, next }. What the /audit page and `waybill audit` read: the dashboard's, the API's and the CLI's actions.
 */

import { handle, json, query, refused } from '@/lib/api';
import { auditQuery } from '@/lib/api/audit';
import { otherMethods } from '@/lib/api/methods';
import { authorizeRequest } from '@/lib/auth/server';
import { audit } from '@/lib/control';
import { auditView } from '@/lib/control/views';
import { callerOf, controlDeps } from '@/lib/data/control';

export async function GET(request: Request) {
  return handle(request, async () => {
    const { who, refusal } = await authorizeRequest(request, 'viewer', { mutation: false });
    if (refusal) return refused(refusal);
    const filters = query(request, auditQuery);
    const page = await audit.list(controlDeps(), callerOf(who, 'api'), filters);
    return json({ entries: page.entries.map(auditView), next: page.next });
  });
}

/** Every other method: 405 METHOD_NOT_ALLOWED with Allow; OPTIONS: 204 with Allow (lib/api/methods.ts). */
export const { POST, PUT, PATCH, DELETE, OPTIONS } = otherMethods('/api/v1/audit', authorizeRequest);
