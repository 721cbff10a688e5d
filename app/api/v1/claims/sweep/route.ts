/**
 * POST /api/v1/claims/sweep — expire every orphaned claim (optionally { "runId": "…" } for one run's)
 * → { expired, keys }.
 */
import { authorizeRequest } from '@/lib/auth/server';
import { body, handle, json, refused } from '@/lib/api';
import { sweep, sweepBody } from '@/lib/api/claims';
import { config } from '@/lib/config';
import { audit } from '@/lib/data/audit';
import { claimTtlMs, getStore } from '@/lib/data/store';

export async function POST(request: Request) {
  return handle(async () => {
    const { who, refusal } = await authorizeRequest(request, 'operator', { mutation: true });
    if (refusal) return refused(refusal);
    const given = await body(request, sweepBody, config().WAYBILL_MAX_BODY_BYTES);
    const done = await sweep(await getStore(), given, who.actor, claimTtlMs());
    await audit(who, { action: 'sweep', target: given?.runId ?? '*', runId: given?.runId ?? null, detail: `${done.expired} expired` });
    return json(done);
  });
}
