/** DELETE /api/v1/webhooks/{id} — delete an alert webhook and its deliveries → { id, deleted: true }. 404 unknown. */

import { body, handle, json, param, refused } from '@/lib/api';
import { otherMethods } from '@/lib/api/methods';
import { webhookActionBody, webhookIdParam } from '@/lib/api/webhooks';
import { authorizeRequest } from '@/lib/auth/server';
import { config } from '@/lib/config';
import { authorize, webhooks } from '@/lib/control';
import { callerOf, controlDeps } from '@/lib/data/control';

export async function DELETE(request: Request, context: { params: Promise<{ id: string }> }) {
  return handle(request, async () => {
    const { who, refusal } = await authorizeRequest(request, 'viewer', { mutation: true });
    if (refusal) return refused(refusal);
    const caller = callerOf(who, 'api');
    authorize(caller, 'operator');
    const id = param((await context.params).id, 'id', webhookIdParam);
    const given = await body(request, webhookActionBody, config().WAYBILL_MAX_BODY_BYTES);
    await webhooks.remove(controlDeps(), caller, { id, reason: given?.reason });
    return json({ id, deleted: true });
  });
}

/** Every other method: 405 METHOD_NOT_ALLOWED with Allow; OPTIONS: 204 with Allow (lib/api/methods.ts). */
export const { GET, HEAD, POST, PUT, PATCH, OPTIONS } = otherMethods('/api/v1/webhooks/{id}', authorizeRequest);
