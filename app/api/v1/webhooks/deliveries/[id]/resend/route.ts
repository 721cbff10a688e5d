/**
 * POST /api/v1/webhooks/deliveries/{id}/resend — send a delivery again, delivered or failed alike, under its same
 * id: due now, its attempts counted afresh → { delivery }. Optional body { "reason"?: "…" }. 404 unknown.
 */

import { body, handle, json, param, refused } from '@/lib/api';
import { otherMethods } from '@/lib/api/methods';
import { deliveryIdParam, webhookActionBody } from '@/lib/api/webhooks';
import { authorizeRequest } from '@/lib/auth/server';
import { config } from '@/lib/config';
import { authorize, webhooks } from '@/lib/control';
import { callerOf, controlDeps } from '@/lib/data/control';

export async function POST(request: Request, context: { params: Promise<{ id: string }> }) {
  return handle(request, async () => {
    const { who, refusal } = await authorizeRequest(request, 'viewer', { mutation: true });
    if (refusal) return refused(refusal);
    const caller = callerOf(who, 'api');
    authorize(caller, 'operator');
    const id = param((await context.params).id, 'id', deliveryIdParam);
    const given = await body(request, webhookActionBody, config().WAYBILL_MAX_BODY_BYTES);
    const delivery = await webhooks.resend(controlDeps(), caller, { id, reason: given?.reason });
    return json({ delivery });
  });
}

/** Every other method: 405 METHOD_NOT_ALLOWED with Allow; OPTIONS: 204 with Allow (lib/api/methods.ts). */
export const { GET, HEAD, PUT, PATCH, DELETE, OPTIONS } = otherMethods(
  '/api/v1/webhooks/deliveries/{id}/resend',
  authorizeRequest,
);
