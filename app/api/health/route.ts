/**
 * GET /api/health — { ok, store: "up" | "down" }; 503 when the store does not answer. No auth: a load
 * balancer has no token, and the answer says nothing but up or down.
 */
import { json } from '@/lib/api';
import { RETRY_AFTER_S } from '@/lib/api/errors';
import { health } from '@/lib/api/health';
import { otherMethods } from '@/lib/api/methods';
import { getStore } from '@/lib/data/store';

// Never prerendered or cached: each probe must reach the store now.
export const dynamic = 'force-dynamic';

export async function GET() {
  const { status, body } = await health(getStore);
  return json(body, status, status === 503 ? { 'retry-after': String(RETRY_AFTER_S) } : {});
}

/** Every other method: 405 METHOD_NOT_ALLOWED with Allow; OPTIONS: 204 with Allow (lib/api/methods.ts). */
export const { POST, PUT, PATCH, DELETE, OPTIONS } = otherMethods('/api/health');
