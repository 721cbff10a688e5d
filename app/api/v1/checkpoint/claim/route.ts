/**
 * POST /api/v1/checkpoint/claim — { runId, key, fingerprint?, leaseMs?, step?, workerId? } →
 *   { outcome: "claimed", token, leaseExpiresAt, attempt } | { outcome: "committed", result } | { outcome: "held", leaseExpiresAt, retryAfterMs }
 * A protocol call, not an operator action: it needs the operator token (it writes) or a run token for the
 * run it names (lib/api/run-scope.ts), and is not audited.
 */

import { body, handle, json, refused } from '@/lib/api';
import { otherMethods } from '@/lib/api/methods';
import { claim, claimBody } from '@/lib/api/protocol';
import { checkRunScope } from '@/lib/api/run-scope';
import { protocolTraceparent } from '@/lib/api/trace';
import { authorizeRequest } from '@/lib/auth/server';
import { config } from '@/lib/config';
import { claimTtlMs, getStore } from '@/lib/data/store';

export async function POST(request: Request) {
  return handle(request, async () => {
    const { who, refusal } = await authorizeRequest(request, 'operator', { mutation: true, run: 'any' });
    if (refusal) return refused(refusal);
    const given = await body(request, claimBody, config().WAYBILL_MAX_BODY_BYTES);
    const store = await getStore();
    await checkRunScope(store, who, { runId: given.runId, keys: [given.key] }, claimTtlMs());
    return json(
      await claim(store, given, {
        leaseMs: config().WAYBILL_LEASE_MS,
        claimTtlMs: claimTtlMs(),
        ...protocolTraceparent(request),
      }),
    );
  });
}

/** Every other method: 405 METHOD_NOT_ALLOWED with Allow; OPTIONS: 204 with Allow (lib/api/methods.ts). */
export const { GET, HEAD, PUT, PATCH, DELETE, OPTIONS } = otherMethods('/api/v1/checkpoint/claim', authorizeRequest);
