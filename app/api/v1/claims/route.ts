/**
 * GET /api/v1/claims — claims in flight, oldest first, orphaned ones marked: ?orphaned=true &runId= &limit= (≤ 500) &cursor=
 */

import { handle, json, query, refused } from '@/lib/api';
import { listClaims, listClaimsQuery } from '@/lib/api/claims';
import { otherMethods } from '@/lib/api/methods';
import { authorizeRequest } from '@/lib/auth/server';
import { claimTtlMs, getStore } from '@/lib/data/store';

export async function GET(request: Request) {
  return handle(request, async () => {
    const { refusal } = await authorizeRequest(request, 'viewer', { mutation: false });
    if (refusal) return refused(refusal);
    return json(await listClaims(await getStore(), query(request, listClaimsQuery), claimTtlMs()));
  });
}

/** Every other method: 405 METHOD_NOT_ALLOWED with Allow; OPTIONS: 204 with Allow (lib/api/methods.ts). */
export const { POST, PUT, PATCH, DELETE, OPTIONS } = otherMethods('/api/v1/claims', authorizeRequest);
