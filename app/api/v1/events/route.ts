/**
 * POST /api/v1/events — send an event: { id, name, data? } → 201 { event, recorded: true, runs, refused, woke }
 * the first time; a re-send of the same event is 200 with recorded: false (the runs it started are answered,
 * nothing is written); the same id with another name or data is 409.
 */

import { body, handle, json, refused } from '@/lib/api';
import { emitBody } from '@/lib/api/events';
import { otherMethods } from '@/lib/api/methods';
import { authorizeRequest } from '@/lib/auth/server';
import { config } from '@/lib/config';
import { authorize, events } from '@/lib/control';
import { callerOf, controlDeps } from '@/lib/data/control';
import { ApiError } from '@/lib/errors';

export async function POST(request: Request) {
  return handle(request, async () => {
    const { who, refusal } = await authorizeRequest(request, 'viewer', { mutation: true });
    if (refusal) return refused(refusal);
    const caller = callerOf(who, 'api');
    authorize(caller, 'operator');
    const given = await body(request, emitBody, config().WAYBILL_MAX_BODY_BYTES);
    if (!given) throw new ApiError('INVALID_INPUT', 'body: must be { "id", "name", "data" }', { id: ['is required'] });
    const emitted = await events.emit(controlDeps(), caller, given);
    return json(emitted, emitted.recorded ? 201 : 200);
  });
}

/** Every other method: 405 METHOD_NOT_ALLOWED with Allow; OPTIONS: 204 with Allow (lib/api/methods.ts). */
export const { GET, HEAD, PUT, PATCH, DELETE, OPTIONS } = otherMethods('/api/v1/events', authorizeRequest);
