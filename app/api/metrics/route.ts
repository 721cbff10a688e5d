/**
 * GET /api/metrics: Prometheus text format, read from the store at scrape time, so the numbers are the
 * fleet's (every worker's steps, claims and heartbeats), whichever dashboard process answers.
 */
import { errorResponse, refused } from '@/lib/api/errors';
import { otherMethods } from '@/lib/api/methods';
import { authorizeRequest } from '@/lib/auth/server';
import { errorFields, serverLog } from '@/lib/data/log';
import { getMetricsText, METRICS_CONTENT_TYPE } from '@/lib/data/metrics';

// Never prerendered or cached: a scrape must read the store now.
export const dynamic = 'force-dynamic';

export async function GET(request: Request): Promise<Response> {
  // A read like any page: the viewer token (Prometheus sends it as `authorization: Bearer`) or better.
  const { refusal } = await authorizeRequest(request, 'viewer', { mutation: false });
  // Refusals and failures in /api/v1's one error shape, so a client of both reads one kind of answer.
  if (refusal) return refused(refusal);
  try {
    const text = await getMetricsText();
    return new Response(text, { headers: { 'content-type': METRICS_CONTENT_TYPE, 'cache-control': 'no-store' } });
  } catch (error) {
    // The details (a SQL error, a connection string in a message, a stack) stay in the server log.
    return errorResponse(error, (_message, cause) =>
      serverLog().error('metrics scrape failed', { route: '/api/metrics', ...errorFields(cause) }),
    );
  }
}

/** Every other method: 405 METHOD_NOT_ALLOWED with Allow; OPTIONS: 204 with Allow (lib/api/methods.ts). */
export const { POST, PUT, PATCH, DELETE, OPTIONS } = otherMethods('/api/metrics', authorizeRequest);
