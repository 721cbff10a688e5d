/**
 * POST /api/v1/checkpoint/usage — { runId, key, token, n, model, inputTokens, outputTokens, cachedTokens?, costUsd? }
 *   → { key, recorded: true, usageKey, step, costUsd }
 * Records a model call the step made without the gateway in the run's usage ledger, as ctx.recordUsage does in
 * a workflow: priced by WAYBILL_GATEWAY_PRICES (else the shipped table) when no cost is given, and keyed
 * `<key>:usage:<attempt>:<n>`, so the same report sent again writes over itself. 409 LEASE_LOST when the token is not
 * the claim's, and nothing is written.
 * A protocol call, not an operator action: it needs the operator token (it writes) or a run token for the
 * run it names (lib/api/run-scope.ts), and is not audited.
 */

import { body, handle, json, refused } from '@/lib/api';
import { otherMethods } from '@/lib/api/methods';
import { usage, usageBody } from '@/lib/api/protocol';
import { checkRunScope } from '@/lib/api/run-scope';
import { authorizeRequest } from '@/lib/auth/server';
import { config } from '@/lib/config';
import { claimTtlMs, getStore } from '@/lib/data/store';
import { priceTableAt } from '@/lib/gateway/prices';

export async function POST(request: Request) {
  return handle(request, async () => {
    const { who, refusal } = await authorizeRequest(request, 'operator', { mutation: true, run: 'any' });
    if (refusal) return refused(refusal);
    const given = await body(request, usageBody, config().WAYBILL_MAX_BODY_BYTES);
    const store = await getStore();
    await checkRunScope(store, who, { runId: given.runId, keys: [given.key] }, claimTtlMs());
    const options = { leaseMs: config().WAYBILL_LEASE_MS, claimTtlMs: claimTtlMs() };
    return json(await usage(store, given, options, priceTableAt(config().WAYBILL_GATEWAY_PRICES)));
  });
}

/** Every other method: 405 METHOD_NOT_ALLOWED with Allow; OPTIONS: 204 with Allow (lib/api/methods.ts). */
export const { GET, HEAD, PUT, PATCH, DELETE, OPTIONS } = otherMethods('/api/v1/checkpoint/usage', authorizeRequest);
