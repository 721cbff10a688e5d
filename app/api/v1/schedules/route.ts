/**
 * GET /api/v1/schedules — every schedule, with its next fire time and last runs → { schedules }.
 * POST /api/v1/schedules — add one: { name, workflow, cron, timeZone?, input?, overlap?, catchUp?, catchUpCap?,
 * paused?, reason? } → 201 { schedule }. A bad cron expression or time zone is 400 naming the field; a taken
 * name 409.
 */

import { body, handle, json, refused } from '@/lib/api';
import { otherMethods } from '@/lib/api/methods';
import { addScheduleBody } from '@/lib/api/schedules';
import { authorizeRequest } from '@/lib/auth/server';
import { config } from '@/lib/config';
import { authorize, schedules } from '@/lib/control';
import { callerOf, controlDeps } from '@/lib/data/control';
import { ApiError } from '@/lib/errors';

export async function GET(request: Request) {
  return handle(request, async () => {
    const { who, refusal } = await authorizeRequest(request, 'viewer', { mutation: false });
    if (refusal) return refused(refusal);
    return json({ schedules: await schedules.list(controlDeps(), callerOf(who, 'api')) });
  });
}

export async function POST(request: Request) {
  return handle(request, async () => {
    const { who, refusal } = await authorizeRequest(request, 'viewer', { mutation: true });
    if (refusal) return refused(refusal);
    const caller = callerOf(who, 'api');
    authorize(caller, 'operator');
    const given = await body(request, addScheduleBody, config().WAYBILL_MAX_BODY_BYTES);
    if (!given)
      throw new ApiError('INVALID_INPUT', 'body: must be { "name", "workflow", "cron", … }', { name: ['is required'] });
    const row = await schedules.add(controlDeps(), caller, given);
    return json({ schedule: schedules.scheduleView(row) }, 201);
  });
}

/** Every other method: 405 METHOD_NOT_ALLOWED with Allow; OPTIONS: 204 with Allow (lib/api/methods.ts). */
export const { PUT, PATCH, DELETE, OPTIONS } = otherMethods('/api/v1/schedules', authorizeRequest);
