/** DELETE /api/v1/schedules/{name} — delete a schedule; the runs it started stay → { name, deleted: true }. 404 unknown. */

import { body, handle, json, param, refused } from '@/lib/api';
import { otherMethods } from '@/lib/api/methods';
import { scheduleActionBody, scheduleNameParam } from '@/lib/api/schedules';
import { authorizeRequest } from '@/lib/auth/server';
import { config } from '@/lib/config';
import { authorize, schedules } from '@/lib/control';
import { callerOf, controlDeps } from '@/lib/data/control';

export async function DELETE(request: Request, context: { params: Promise<{ name: string }> }) {
  return handle(request, async () => {
    const { who, refusal } = await authorizeRequest(request, 'viewer', { mutation: true });
    if (refusal) return refused(refusal);
    const caller = callerOf(who, 'api');
    authorize(caller, 'operator');
    const name = param((await context.params).name, 'name', scheduleNameParam);
    const given = await body(request, scheduleActionBody, config().WAYBILL_MAX_BODY_BYTES);
    await schedules.remove(controlDeps(), caller, { name, reason: given?.reason });
    return json({ name, deleted: true });
  });
}

/** Every other method: 405 METHOD_NOT_ALLOWED with Allow; OPTIONS: 204 with Allow (lib/api/methods.ts). */
export const { GET, HEAD, POST, PUT, PATCH, OPTIONS } = otherMethods('/api/v1/schedules/{name}', authorizeRequest);
