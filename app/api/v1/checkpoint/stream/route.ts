/**
 * POST /api/v1/checkpoint/stream — { runId, key, token, seq, text } → { key, streamed: true, step, attempt, seq }
 * Appends text to the transcript of the step the claim is for (its step page shows it growing), as ctx.stream
 * does in a workflow; 409 LEASE_LOST when the token is not the claim's, and nothing is written.
 * A protocol call, not an operator action: it needs the operator token (it writes) or a run token for the
 * run it names (lib/api/run-scope.ts), and is not audited.
 */

import { body, handle, json, refused } from '@/lib/api';
import { otherMethods } from '@/lib/api/methods';
import { stream, streamBody } from '@/lib/api/protocol';
import { checkRunScope } from '@/lib/api/run-scope';
import { authorizeRequest } from '@/lib/auth/server';
import { config } from '@/lib/config';
import { claimTtlMs, getStore } from '@/lib/data/store';

export async function POST(request: Request) {
  return handle(request, async () => {
    const { who, refusal } = await authorizeRequest(request, 'operator', { mutation: true, run: 'any' });
    if (refusal) return refused(refusal);
    const given = await body(request, streamBody, config().WAYBILL_MAX_BODY_BYTES);
    const store = await getStore();
    await checkRunScope(store, who, { runId: given.runId, keys: [given.key], writes: [given.text] }, claimTtlMs());
    return json(await stream(store, given, { leaseMs: config().WAYBILL_LEASE_MS, claimTtlMs: claimTtlMs() }));
  });
}

/** Every other method: 405 METHOD_NOT_ALLOWED with Allow; OPTIONS: 204 with Allow (lib/api/methods.ts). */
export const { GET, HEAD, PUT, PATCH, DELETE, OPTIONS } = otherMethods('/api/v1/checkpoint/stream', authorizeRequest);
