/**
 * POST /api/v1/claims/expire — { "key": "…", "force"?: true }: give up on a claim, so its step runs again.
 * 404 when there is no claim on the key; 409 when its lease is live and force is not set.
 */
import { authorizeRequest } from '@/lib/auth/server';
import { body, handle, json, refused } from '@/lib/api';
import { expire, expireBody } from '@/lib/api/claims';
import { config } from '@/lib/config';
import { audit } from '@/lib/data/audit';
import { claimTtlMs, getStore } from '@/lib/data/store';

export async function POST(request: Request) {
  return handle(async () => {
    const { who, refusal } = await authorizeRequest(request, 'operator', { mutation: true });
    if (refusal) return refused(refusal);
    const given = await body(request, expireBody, config().WAYBILL_MAX_BODY_BYTES);
    const done = await expire(await getStore(), given, who.actor, claimTtlMs());
    await audit(who, { action: 'expire', target: given.key, runId: done.runId, detail: given.force ? 'forced' : null });
    return json(done);
  });
}
