/**
 * The Anthropic API's route: `baseURL` is the gateway itself, as it is api.anthropic.com (the SDK adds
 * `/v1/messages`). The provider key goes upstream as `x-api-key`, in place of the sandbox's run token.
 */
import type { GatewayRoute } from './routes';

/** The API version sent when the client names none. */
const ANTHROPIC_VERSION = '2023-06-01';

export const ANTHROPIC_ROUTES: GatewayRoute[] = [
  {
    path: '/v1/messages',
    api: 'anthropic.messages',
    upstreamUrl: (s) => `${s.WAYBILL_GATEWAY_ANTHROPIC_URL}/v1/messages`,
    upstreamHeaders(settings, incoming) {
      const out: Record<string, string> = {
        'content-type': 'application/json',
        'anthropic-version': incoming.get('anthropic-version') ?? ANTHROPIC_VERSION,
      };
      if (settings.WAYBILL_GATEWAY_ANTHROPIC_KEY) out['x-api-key'] = settings.WAYBILL_GATEWAY_ANTHROPIC_KEY;
      for (const name of ['accept', 'anthropic-beta']) {
        const value = incoming.get(name);
        if (value) out[name] = value;
      }
      return out;
    },
    upstreamBody: (body) => body,
  },
];
