/**
 * POST /api/v1/runs/{id}/budget — { budgetUsd, reason? } → { run }: sets the run's budget for model calls through
 * the gateway (lib/control runs.budget), audited. A run the gateway paused at its budget continues once raised
 * and resumed (POST …/resume). 400 naming the field for a budget that is not a number above 0 and at most 1e6.
 */

import { body, handle, json, param, refused } from '@/lib/api';
import { runRef } from '@/lib/api/ids';
import { otherMethods } from '@/lib/api/methods';
import { budgetBody } from '@/lib/api/runs';
import { authorizeRequest } from '@/lib/auth/server';
import { config } from '@/lib/config';
import { authorize, runs } from '@/lib/control';
import { judgeRun } from '@/lib/control/queued';
import { stallSettings } from '@/lib/control/stalled';
import { runView } from '@/lib/control/views';
import { callerOf, controlDeps } from '@/lib/data/control';
import { getStore } from '@/lib/data/store';

export async function POST(request: Request, context: { params: Promise<{ id: string }> }) {
  return handle(request, async () => {
    const { who, refusal } = await authorizeRequest(request, 'viewer', { mutation: true });
    if (refusal) return refused(refusal);
    const caller = callerOf(who, 'api');
    authorize(caller, 'operator'); // before the body is read; lib/control decides again
    const id = param((await context.params).id, 'id', runRef);
    const given = await body(request, budgetBody, config().WAYBILL_MAX_BODY_BYTES);
    const run = await runs.budget(controlDeps(), caller, { runId: id, ...given });
    const { stall, queuedReason } = await judgeRun(await getStore(), run, stallSettings(config()));
    return json({ run: runView(run, false, stall, queuedReason) });
  });
}

/** Every other method: 405 METHOD_NOT_ALLOWED with Allow; OPTIONS: 204 with Allow (lib/api/methods.ts). */
export const { GET, HEAD, PUT, PATCH, DELETE, OPTIONS } = otherMethods('/api/v1/runs/{id}/budget', authorizeRequest);
