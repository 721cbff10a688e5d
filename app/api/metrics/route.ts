/**
 * GET /api/metrics: Prometheus text format, read from the store at scrape time, so the numbers are the
 * fleet's (every worker's steps, claims and heartbeats), whichever dashboard process answers.
 */
import { authorizeRequest } from '@/lib/auth/server';
import { errorFields, serverLog } from '@/lib/data/log';
import { getMetricsText, METRICS_CONTENT_TYPE } from '@/lib/data/metrics';

// Never prerendered or cached: a scrape must read the store now.
export const dynamic = 'force-dynamic';

export async function GET(request: Request): Promise<Response> {
  // A read like any page: the viewer token (Prometheus sends it as `authorization: Bearer`) or better.
  const { refusal } = await authorizeRequest(request, 'viewer', { mutation: false });
  if (refusal) return Response.json({ error: { code: refusal.status === 401 ? 'UNAUTHORIZED' : 'FORBIDDEN', message: refusal.message } }, { status: refusal.status });
  try {
    const text = await getMetricsText();
    return new Response(text, { headers: { 'content-type': METRICS_CONTENT_TYPE, 'cache-control': 'no-store' } });
  } catch (error) {
    // The details (a SQL error, a connection string in a message, a stack) stay in the server log.
    serverLog().error('metrics scrape failed', { route: '/api/metrics', ...errorFields(error) });
    return Response.json({ error: 'metrics unavailable: the store could not be read (see the server log)' },
      { status: 500, headers: { 'cache-control': 'no-store' } });
  }
}
