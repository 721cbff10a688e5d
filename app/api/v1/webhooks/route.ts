/**
 * GET /api/v1/webhooks — every alert webhook, oldest first → { webhooks } (each secret as its last four characters).
 * POST /api/v1/webhooks — subscribe a URL: { url, events, secret?, inDoubtSeconds?, reason? } → 201 { webhook },
 * with its secret, shown this once. A bad URL or an unknown event is 400 naming the field.
 */

import { body, handle, json, refused } from '@/lib/api';
import { otherMethods } from '@/lib/api/methods';
import { addWebhookBody } from '@/lib/api/webhooks';
import { authorizeRequest } from '@/lib/auth/server';
import { config } from '@/lib/config';
import { authorize, webhooks } from '@/lib/control';
import { callerOf, controlDeps } from '@/lib/data/control';
import { ApiError } from '@/lib/errors';

export async function GET(request: Request) {
  return handle(request, async () => {
    const { who, refusal } = await authorizeRequest(request, 'viewer', { mutation: false });
    if (refusal) return refused(refusal);
    return json({ webhooks: await webhooks.list(controlDeps(), callerOf(who, 'api')) });
  });
}

export async function POST(request: Request) {
  return handle(request, async () => {
    const { who, refusal } = await authorizeRequest(request, 'viewer', { mutation: true });
    if (refusal) return refused(refusal);
    const caller = callerOf(who, 'api');
    authorize(caller, 'operator');
    const given = await body(request, addWebhookBody, config().WAYBILL_MAX_BODY_BYTES);
    if (!given) throw new ApiError('INVALID_INPUT', 'body: must be { "url", "events", … }', { url: ['is required'] });
    return json({ webhook: await webhooks.add(controlDeps(), caller, given) }, 201);
  });
}

/** Every other method: 405 METHOD_NOT_ALLOWED with Allow; OPTIONS: 204 with Allow (lib/api/methods.ts). */
export const { PUT, PATCH, DELETE, OPTIONS } = otherMethods('/api/v1/webhooks', authorizeRequest);
