/**
 * GET  /api/v1/runs — runs newest first, outside clients' included: ?status= &workflow= &q= &parent= &tag=… &meta=k=v… &limit= (≤ 500) &cursor=
 * POST /api/v1/runs — start a run of a built-in or published workflow: { "workflow": "agent-batch", "input": {…}, "id"?: "…", "budgetUsd"?: 2.5, "priority"?: 10, "tags"?: […], "metadata"?: {…}, "traceparent"?: "00-…" } → 201 { run, existed: false }
 *   The run's trace context: the body's traceparent (a malformed one → 400), else the traceparent header (a malformed one is ignored).
 *   An id that exists with the same workflow and parsed input → 200 { run, existed: true }, nothing written; with another → 409 CONFLICT.
 */

import { body, handle, json, query, refused } from '@/lib/api';
import { otherMethods } from '@/lib/api/methods';
import { LIST_RUNS_REPEATABLE, listRuns, listRunsQuery, startBody, startTraceparent } from '@/lib/api/runs';
import { authorizeRequest } from '@/lib/auth/server';
import { config } from '@/lib/config';
import { authorize, runs } from '@/lib/control';
import { judgeRun } from '@/lib/control/queued';
import { stallSettings } from '@/lib/control/stalled';
import { runView } from '@/lib/control/views';
import { callerOf, controlDeps } from '@/lib/data/control';
import { claimTtlMs, getStore } from '@/lib/data/store';

export async function GET(request: Request) {
  return handle(request, async () => {
    const { refusal } = await authorizeRequest(request, 'viewer', { mutation: false });
    if (refusal) return refused(refusal);
    const filters = query(request, listRunsQuery, LIST_RUNS_REPEATABLE);
    return json(await listRuns(await getStore(), filters, claimTtlMs(), stallSettings(config())));
  });
}

export async function POST(request: Request) {
  return handle(request, async () => {
    const { who, refusal } = await authorizeRequest(request, 'viewer', { mutation: true });
    if (refusal) return refused(refusal);
    const caller = callerOf(who, 'api');
    authorize(caller, 'operator'); // before the body is read; lib/control decides again
    const given = await body(request, startBody, config().WAYBILL_MAX_BODY_BYTES);
    const traceparent = startTraceparent(request, given);
    const { existed, runTags, ...row } = await runs.start(controlDeps(), caller, { ...given, traceparent });
    const { stall, queuedReason } = await judgeRun(await getStore(), row, stallSettings(config()));
    const run = { ...runView(row, false, stall, queuedReason), ...runTags };
    return json({ run, existed }, existed ? 200 : 201, { location: `/api/v1/runs/${encodeURIComponent(run.id)}` });
  });
}

/** Every other method: 405 METHOD_NOT_ALLOWED with Allow; OPTIONS: 204 with Allow (lib/api/methods.ts). */
export const { PUT, PATCH, DELETE, OPTIONS } = otherMethods('/api/v1/runs', authorizeRequest);
