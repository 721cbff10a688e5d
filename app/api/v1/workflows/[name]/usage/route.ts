/**
 * GET /api/v1/workflows/{name}/usage — the model calls of every run of a workflow, summed: in total and by
 * model (lib/control/usage). 404 for a name with no run that nothing can start.
 */

import { handle, json, param, refused } from '@/lib/api';
import { otherMethods } from '@/lib/api/methods';
import { workflowParam } from '@/lib/api/usage';
import { authorizeRequest } from '@/lib/auth/server';
import { usage } from '@/lib/control';
import { callerOf, controlDeps } from '@/lib/data/control';

export async function GET(request: Request, context: { params: Promise<{ name: string }> }) {
  return handle(request, async () => {
    const { who, refusal } = await authorizeRequest(request, 'viewer', { mutation: false });
    if (refusal) return refused(refusal);
    const name = param((await context.params).name, 'name', workflowParam);
    return json(await usage.ofWorkflow(controlDeps(), callerOf(who, 'api'), { workflow: name }));
  });
}

/** Every other method: 405 METHOD_NOT_ALLOWED with Allow; OPTIONS: 204 with Allow (lib/api/methods.ts). */
export const { POST, PUT, PATCH, DELETE, OPTIONS } = otherMethods('/api/v1/workflows/{name}/usage', authorizeRequest);
