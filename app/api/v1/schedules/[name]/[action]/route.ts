/**
 * POST /api/v1/schedules/{name}/{pause|resume} — pause a schedule (no tick fires) or resume it from the next
 * tick after now → { schedule }. Optional body { "reason"?: "…" }, kept in the audit line. 404 unknown.
 */

import { body, handle, json, param, refused } from '@/lib/api';
import { otherMethods } from '@/lib/api/methods';
import { SCHEDULE_ACTIONS, scheduleActionBody, scheduleActionParam, scheduleNameParam } from '@/lib/api/schedules';
import { authorizeRequest } from '@/lib/auth/server';
import { config } from '@/lib/config';
import { authorize, schedules } from '@/lib/control';
import { callerOf, controlDeps } from '@/lib/data/control';
import { ApiError } from '@/lib/errors';

export async function POST(request: Request, context: { params: Promise<{ name: string; action: string }> }) {
  return handle(request, async () => {
    const { who, refusal } = await authorizeRequest(request, 'viewer', { mutation: true });
    if (refusal) return refused(refusal);
    const caller = callerOf(who, 'api');
    authorize(caller, 'operator');
    const params = await context.params;
    const name = param(params.name, 'name', scheduleNameParam);
    const action = scheduleActionParam.safeParse(params.action);
    if (!action.success)
      throw new ApiError(
        'NOT_FOUND',
        `no such schedule action ${JSON.stringify(params.action.slice(0, 64))}: one of ${SCHEDULE_ACTIONS.join(', ')}`,
      );
    const given = await body(request, scheduleActionBody, config().WAYBILL_MAX_BODY_BYTES);
    const row = await schedules.setPaused(controlDeps(), caller, action.data === 'pause', {
      name,
      reason: given?.reason,
    });
    return json({ schedule: schedules.scheduleView(row) });
  });
}

/** Every other method: 405 METHOD_NOT_ALLOWED with Allow; OPTIONS: 204 with Allow (lib/api/methods.ts). */
export const { GET, HEAD, PUT, PATCH, DELETE, OPTIONS } = otherMethods(
  '/api/v1/schedules/{name}/{action}',
  authorizeRequest,
);
