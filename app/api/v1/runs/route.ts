/**
 * GET  /api/v1/runs — runs newest first, outside clients' included: ?status= &workflow= &q= &limit= (≤ 500) &cursor=
 * POST /api/v1/runs — start a run of a built-in or published workflow: { "workflow": "agent-batch", "input": {…}, "id"?: "…" } → 201 { run }
 */
import { authorizeRequest } from '@/lib/auth/server';
import { body, handle, json, query, refused } from '@/lib/api';
import { listRuns, listRunsQuery, start, startBody } from '@/lib/api/runs';
import { config } from '@/lib/config';
import { audit } from '@/lib/data/audit';
import { claimTtlMs, getCatalog, getStore } from '@/lib/data/store';

export async function GET(request: Request) {
  return handle(async () => {
    const { refusal } = await authorizeRequest(request, 'viewer', { mutation: false });
    if (refusal) return refused(refusal);
    const filters = query(request, listRunsQuery);
    return json(await listRuns(await getStore(), filters, claimTtlMs()));
  });
}

export async function POST(request: Request) {
  return handle(async () => {
    const { who, refusal } = await authorizeRequest(request, 'operator', { mutation: true });
    if (refusal) return refused(refusal);
    const given = await body(request, startBody, config().WAYBILL_MAX_BODY_BYTES);
    const [store, catalog] = await Promise.all([getStore(), getCatalog()]);
    const run = await start(store, catalog, given, who.actor);
    await audit(who, { action: 'start', target: run.id, runId: run.id, detail: `workflow ${run.workflow}` });
    return json({ run }, 201, { location: `/api/v1/runs/${encodeURIComponent(run.id)}` });
  });
}
