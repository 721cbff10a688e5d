/**
 * GET /api/v1/webhooks/deliveries — the alert webhooks' deliveries, newest first: ?webhookId= &status=
 * (pending, delivered, failed) &limit= (≤ 500) → { deliveries }, each with its attempts and last error.
 */

import { handle, json, query, refused } from '@/lib/api';
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
