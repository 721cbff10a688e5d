/**
 * POST /api/v1/claims/resolve — { "key": "…", "result": <any JSON>, "note"?: "…", "force"?: true, "attempt"?: n }:
 * commit a result by hand (source manual) for a claim whose side effect is in doubt; the step never runs again.
 * A claim whose lease is live, or that is no longer the `attempt` listed, is refused (409) and nothing is audited.
 */
import { authorizeRequest } from '@/lib/auth/server';
import { body, handle, json, refused } from '@/lib/api';
import { resolve, resolveBody } from '@/lib/api/claims';
import { config } from '@/lib/config';
import { audit } from '@/lib/data/audit';
import { claimTtlMs, getStore } from '@/lib/data/store';

export async function POST(request: Request) {
  return handle(async () => {
    const { who, refusal } = await authorizeRequest(request, 'operator', { mutation: true });
    if (refusal) return refused(refusal);
    const given = await body(request, resolveBody, config().WAYBILL_MAX_BODY_BYTES);
    const done = await resolve(await getStore(), given, who.actor, claimTtlMs());
    await audit(who, { action: 'resolve', target: given.key, runId: done.runId, detail: given.note ?? null });
    return json(done);
  });
}
