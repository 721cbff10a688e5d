/**
 * One call to the provider: the route's URL, the provider's key in place of the sandbox's credentials, and a
 * time limit on the whole answer (a stream included: the signal also cuts its body).
 */
import type { GatewayRoute, GatewaySettings, Json } from './routes';

export async function callUpstream(
  route: GatewayRoute,
  settings: GatewaySettings,
  incoming: Headers,
  body: Json,
  fetcher: typeof fetch = fetch,
): Promise<Response> {
  return fetcher(route.upstreamUrl(settings), {
    method: 'POST',
    headers: route.upstreamHeaders(settings, incoming),
    body: JSON.stringify(route.upstreamBody(body)),
    signal: AbortSignal.timeout(settings.WAYBILL_GATEWAY_TIMEOUT_MS),
  });
}
