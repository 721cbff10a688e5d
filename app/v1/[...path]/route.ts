/**
 * The model gateway, served by the dashboard as `waybill gateway` serves it on its own: POST
 * /v1/chat/completions, /v1/responses, /v1/embeddings (the OpenAI SDK's baseURL is this server's `/v1`) and
 * /v1/messages (the Anthropic SDK's baseURL is this server). One handler for both (lib/gateway/handler.ts),
 * with the deps `waybill gateway` builds (lib/gateway/deps.ts) over the dashboard's store; it authorizes the
 * caller itself (run tokens, the operator token: lib/gateway/auth.ts) and answers any other path or method in
 * its own JSON error shape. A streamed answer is handed to Next as the stream it is, each chunk as it arrives.
 * proxy.ts does not match /v1, so Next neither copies nor holds the body before this runs.
 */

import { config } from '@/lib/config';
import { serverLog } from '@/lib/data/log';
import { getStore } from '@/lib/data/store';
import { gatewayDeps } from '@/lib/gateway/deps';
import { type GatewayDeps, gatewayError, handleGatewayRequest, routeOf } from '@/lib/gateway/handler';
import { priceTableAt } from '@/lib/gateway/prices';

// Never prerendered or cached: every call is the caller's own.
export const dynamic = 'force-dynamic';
// The store's drivers, node:crypto, and answers streamed for minutes.
export const runtime = 'nodejs';

const warn = (message: string, fields: Record<string, unknown>) =>
  serverLog().warn(message, { route: '/v1', ...fields });

async function gateway(request: Request): Promise<Response> {
  let deps: GatewayDeps;
  try {
    // A store that cannot be opened (503) is answered in the gateway's error shape, as its own refusals are.
    const cfg = config();
    deps = gatewayDeps(await getStore(), cfg, priceTableAt(cfg.WAYBILL_GATEWAY_PRICES), warn);
  } catch (error) {
    return gatewayError(error, warn, routeOf(request)?.api);
  }
  return handleGatewayRequest(request, deps);
}

export { gateway as DELETE, gateway as GET, gateway as PATCH, gateway as POST, gateway as PUT };
