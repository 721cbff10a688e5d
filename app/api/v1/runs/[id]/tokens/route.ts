/**
 * POST /api/v1/runs/{id}/tokens — { ttl?: "24h" } → 201 { token, runId, expiresAt }: a token that may use the
 * checkpoint protocol for this run only (lib/auth/run-token.ts), for a sandboxed agent instead of the operator
 * token. Operator only, and audited (lib/control/tokens.ts): it hands out a credential.
 */

import { body, handle, json, param, refused } from '@/lib/api';
import { runRef } from '@/lib/api/ids';
import { otherMethods } from '@/lib/api/methods';
import { tokenBody } from '@/lib/api/tokens';
import { authorizeRequest } from '@/lib/auth/server';
import { config } from '@/lib/config';
import { authorize, tokens } from '@/lib/control';
import { callerOf, controlDeps } from '@/lib/data/control';

export async function POST(request: Request, context: { params: Promise<{ id: string }> }) {
  return handle(request, async () => {
    const { who, refusal } = await authorizeRequest(request, 'operator', { mutation: true });
    if (refusal) return refused(refusal);
    const caller = callerOf(who, 'api');
    authorize(caller, 'operator'); // before the body is read; lib/control decides again
    const id = param((await context.params).id, 'id', runRef);
    const given = await body(request, tokenBody, config().WAYBILL_MAX_BODY_BYTES);
    const minted = await tokens.mint(
      controlDeps(),
      caller,
      { runId: id, ttl: given?.ttl },
      { auth: config(), nowMs: Date.now() },
    );
    return json(minted, 201);
  });
}

/** Every other method: 405 METHOD_NOT_ALLOWED with Allow; OPTIONS: 204 with Allow (lib/api/methods.ts). */
export const { GET, HEAD, PUT, PATCH, DELETE, OPTIONS } = otherMethods('/api/v1/runs/{id}/tokens', authorizeRequest);
