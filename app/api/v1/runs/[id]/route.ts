/**
 * GET /api/v1/runs/{id} — the run (or an outside client's run, made from its rows), its progress, counts of
 * committed steps and claims, its live claims, and the actions its status allows.
 */

import { handle, json, param, refused } from '@/lib/api';
import { runRef } from '@/lib/api/ids';
import { otherMethods } from '@/lib/api/methods';
import { getRun } from '@/lib/api/runs';
import { authorizeRequest } from '@/lib/auth/server';
import { config } from '@/lib/config';
import { stallSettings } from '@/lib/control/stalled';
import { claimTtlMs, getStore } from '@/lib/data/store';

export async function GET(request: Request, context: { params: Promise<{ id: string }> }) {
  return handle(request, async () => {
    const { refusal } = await authorizeRequest(request, 'viewer', { mutation: false });
    if (refusal) return refused(refusal);
    const id = param((await context.params).id, 'id', runRef);
    return json(await getRun(await getStore(), id, claimTtlMs(), stallSettings(config())));
  });
}

/** Every other method: 405 METHOD_NOT_ALLOWED with Allow; OPTIONS: 204 with Allow (lib/api/methods.ts). */
export const { POST, PUT, PATCH, DELETE, OPTIONS } = otherMethods('/api/v1/runs/{id}', authorizeRequest);
