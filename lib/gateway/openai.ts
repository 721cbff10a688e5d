/**
 * The OpenAI API's routes: `baseURL` is the gateway's `/v1`, as it is api.openai.com's. The provider key goes
 * upstream as the bearer token, in place of the sandbox's run token.
 */
import type { GatewayRoute, GatewaySettings, Json } from './routes';

function headers(settings: GatewaySettings, incoming: Headers): Record<string, string> {
  const out: Record<string, string> = { 'content-type': 'application/json' };
  if (settings.WAYBILL_GATEWAY_OPENAI_KEY) out.authorization = `Bearer ${settings.WAYBILL_GATEWAY_OPENAI_KEY}`;
  for (const name of ['accept', 'openai-organization', 'openai-project', 'openai-beta']) {
    const value = incoming.get(name);
    if (value) out[name] = value;
  }
  return out;
}

const route = (path: string, api: GatewayRoute['api'], upstreamBody = (b: Json) => b): GatewayRoute => ({
  path: `/v1${path}`,
  api,
  upstreamUrl: (s) => `${s.WAYBILL_GATEWAY_OPENAI_URL}${path}`,
  upstreamHeaders: headers,
  upstreamBody,
});

/**
 * A streamed chat completion reports its tokens only when asked (a last chunk with `usage` and no choices):
 * the gateway asks, so every stream is counted. The SDKs read that chunk as one more event.
 */
function countStream(body: Json): Json {
  if (body.stream !== true) return body;
  const options = (body.stream_options ?? {}) as Json;
  return { ...body, stream_options: { ...options, include_usage: true } };
}

export const OPENAI_ROUTES: GatewayRoute[] = [
  route('/chat/completions', 'openai.chat', countStream),
  route('/responses', 'openai.responses'),
  route('/embeddings', 'openai.embeddings'),
];
