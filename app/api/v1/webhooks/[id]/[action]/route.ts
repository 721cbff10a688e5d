/**
 * POST /api/v1/webhooks/{id}/{pause|resume} — pause an alert webhook (no new events for it, its pending
 * deliveries wait) or resume it → { webhook }. Optional body { "reason"?: "…" }, kept in the audit line. 404 unknown.
 */

import { body, handle, json, param, refused } from '@/lib/api';
import { otherMethods } from '@/lib/api/methods';
import { WEBHOOK_ACTIONS, webhookActionBody, webhookActionParam, webhookIdParam } from '@/lib/api/webhooks';
import { authorizeRequest } from '@/lib/auth/server';
import { config } from '@/lib/config';
import { authorize, webhooks } from '@/lib/control';
import { callerOf, controlDeps } from '@/lib/data/control';
import { ApiError } from '@/lib/errors';

export async function POST(request: Request, context: { params: Promise<{ id: string; action: string }> }) {
  return handle(request, async () => {
    const { who, refusal } = await authorizeRequest(request, 'viewer', { mutation: true });
    if (refusal) return refused(refusal);
    const caller = callerOf(who, 'api');
    authorize(caller, 'operator');
    const params = await context.params;
    const id = param(params.id, 'id', webhookIdParam);
    const action = webhookActionParam.safeParse(params.action);
    if (!action.success)
      throw new ApiError(
        'NOT_FOUND',
        `no such webhook action ${JSON.stringify(params.action.slice(0, 64))}: one of ${WEBHOOK_ACTIONS.join(', ')}`,
      );
    const given = await body(request, webhookActionBody, config().WAYBILL_MAX_BODY_BYTES);
    const webhook = await webhooks.setPaused(controlDeps(), caller, action.data === 'pause', {
      id,
      reason: given?.reason,
    });
    return json({ webhook });
  });
}

/** Every other method: 405 METHOD_NOT_ALLOWED with Allow; OPTIONS: 204 with Allow (lib/api/methods.ts). */
export const { GET, HEAD, PUT, PATCH, DELETE, OPTIONS } = otherMethods(
  '/api/v1/webhooks/{id}/{action}',
  authorizeRequest,
);
