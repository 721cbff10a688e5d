/**
 * POST /api/v1/checkpoint/renew — { key, token, leaseMs? }: extend the lease while the side effect runs; 409 LEASE_LOST when fenced.
 * A protocol call, not an operator action: it needs the operator token (it writes) but is not audited.
 */
import { authorizeRequest } from '@/lib/auth/server';
import { body, handle, json, refused } from '@/lib/api';
import { renew, renewBody } from '@/lib/api/protocol';
import { config } from '@/lib/config';
import { claimTtlMs, getStore } from '@/lib/data/store';

export async function POST(request: Request) {
  return handle(async () => {
    const { refusal } = await authorizeRequest(request, 'operator', { mutation: true });
    if (refusal) return refused(refusal);
    const given = await body(request, renewBody, config().WAYBILL_MAX_BODY_BYTES);
    return json(await renew(await getStore(), given, { leaseMs: config().WAYBILL_LEASE_MS, claimTtlMs: claimTtlMs() }));
  });
}
