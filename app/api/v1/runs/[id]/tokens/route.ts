/**
 * POST /api/v1/runs/{id}/tokens — { ttl?: "24h" } → 201 { token, runId, expiresAt }: a token that may use the
 * checkpoint protocol for this run only (lib/auth/run-token.ts), for a sandboxed agent instead of the operator
 * token. Operator only, and audited: it hands out a credential.
 */
import { authorizeRequest } from '@/lib/auth/server';
import { body, handle, json, param, refused } from '@/lib/api';
import { runRef } from '@/lib/api/ids';
import { tokenBody } from '@/lib/api/tokens';
import { mintRunToken } from '@/lib/auth/run-token';
import { config } from '@/lib/config';
import { audit } from '@/lib/data/audit';

export async function POST(request: Request, context: { params: Promise<{ id: string }> }) {
  return handle(async () => {
    const { who, refusal } = await authorizeRequest(request, 'operator', { mutation: true });
    if (refusal) return refused(refusal);
    const id = param((await context.params).id, 'id', runRef);
    const given = await body(request, tokenBody, config().WAYBILL_MAX_BODY_BYTES);
    const minted = mintRunToken(config(), id, given?.ttl, Date.now());
    await audit(who, { action: 'token', target: id, runId: id, detail: `expires ${new Date(minted.expiresAt * 1000).toISOString()}` });
    return json(minted, 201);
  });
}
