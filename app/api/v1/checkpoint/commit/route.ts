/**
 * POST /api/v1/checkpoint/commit — { runId, key, token, result, step?, fingerprint?, progress?, next? }: result and
 * committed mark (and progress) in one transaction; 409 LEASE_LOST when the token is not the claim's, 422 on key reuse.
 * The answer's `run` is the run's status from that transaction (null when undeclared): paused or cancelled, stop.
 * A protocol call, not an operator action: it needs the operator token (it writes) or a run token for the
 * run it names (lib/api/run-scope.ts), and is not audited.
 */

import { body, handle, json, refused } from '@/lib/api';
import { otherMethods } from '@/lib/api/methods';
import { commit, commitBody } from '@/lib/api/protocol';
import { checkRunScope } from '@/lib/api/run-scope';
import { protocolTraceparent } from '@/lib/api/trace';
import { authorizeRequest } from '@/lib/auth/server';
import { config } from '@/lib/config';
import { claimTtlMs, getStore } from '@/lib/data/store';

export async function POST(request: Request) {
  return handle(request, async () => {
    const { who, refusal } = await authorizeRequest(request, 'operator', { mutation: true, run: 'any' });
    if (refusal) return refused(refusal);
    const given = await body(request, commitBody, config().WAYBILL_MAX_BODY_BYTES);
    const store = await getStore();
    await checkRunScope(
      store,
      who,
      {
        runId: given.runId,
        keys: [given.key, given.next?.key],
        writes: [given.result, given.input, given.progress?.state],
      },
      claimTtlMs(),
    );
    return json(
      await commit(store, given, {
        leaseMs: config().WAYBILL_LEASE_MS,
        claimTtlMs: claimTtlMs(),
        ...protocolTraceparent(request),
      }),
    );
  });
}

/** Every other method: 405 METHOD_NOT_ALLOWED with Allow; OPTIONS: 204 with Allow (lib/api/methods.ts). */
export const { GET, HEAD, PUT, PATCH, DELETE, OPTIONS } = otherMethods('/api/v1/checkpoint/commit', authorizeRequest);
