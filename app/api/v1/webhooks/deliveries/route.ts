/**
 * GET /api/v1/webhooks/deliveries — the alert webhooks' deliveries, newest first: ?webhookId= &status=
 * (pending, delivered, failed) &limit= (≤ 500) → { deliveries }, each with its attempts and last error.
 */

import { handle, json, query, refused } from '@/lib/api';
import { otherMethods } from '@/lib/api/methods';
import { deliveriesQuery } from '@/lib/api/webhooks';
import { authorizeRequest } from '@/lib/auth/server';
import { webhooks } from '@/lib/control';
import { callerOf, controlDeps } from '@/lib/data/control';

export async function GET(request: Request) {
  return handle(request, async () => {
    const { who, refusal } = await authorizeRequest(request, 'viewer', { mutation: false });
    if (refusal) return refused(refusal);
    const filters = query(request, deliveriesQuery);
    return json({ deliveries: await webhooks.deliveries(controlDeps(), callerOf(who, 'api'), filters) });
  });
}

/** Every other method: 405 METHOD_NOT_ALLOWED with Allow; OPTIONS: 204 with Allow (lib/api/methods.ts). */
export const { POST, PUT, PATCH, DELETE, OPTIONS } = otherMethods('/api/v1/webhooks/deliveries', authorizeRequest);
