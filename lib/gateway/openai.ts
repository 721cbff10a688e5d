/**
 * The OpenAI API's routes: `baseURL` is the gateway's `/v1`, as it is api.openai.com's. The provider key goes
 * upstream as the bearer token, in place of the sandbox's run token.
 */
import type { GatewayRoute, GatewaySettings, Json } from './routes';
import type { SseEvent } from './sse';

function headers(settings: GatewaySettings, incoming: Headers): Record<string, string> {
  const out: Record<string, string> = { 'content-type': 'application/json' };
  if (settings.WAYBILL_GATEWAY_OPENAI_KEY) out.authorization = `Bearer ${settings.WAYBILL_GATEWAY_OPENAI_KEY}`;
  for (const name of ['accept', 'openai-organization', 'openai-project', 'openai-beta']) {
    const value = incoming.get(name);
    if (value) out[name] = value;
  }
  return out;
}

const route = (path: string, api: GatewayRoute['api'], extra: Partial<GatewayRoute> = {}): GatewayRoute => ({
  path: `/v1${path}`,
  api,
  upstreamUrl: (s) => `${s.WAYBILL_GATEWAY_OPENAI_URL}${path}`,
  upstreamHeaders: headers,
  upstreamBody: (b) => b,
  ...extra,
});

const isObject = (v: unknown): v is Json => v !== null && typeof v === 'object' && !Array.isArray(v);

/**
 * A streamed chat completion reports its tokens only when asked (`stream_options.include_usage`): one more
 * chunk before `[DONE]`, with the usage and no choices, and `usage: null` on every other chunk. The gateway
 * asks, so every stream is counted. (Options that are not an object are the upstream's to refuse, as sent.)
 */
function countStream(body: Json): Json {
  if (body.stream !== true) return body;
  const options = body.stream_options ?? {};
  if (!isObject(options)) return body;
  return { ...body, stream_options: { ...options, include_usage: true } };
}

/**
 * What the client gets of the stream: a client that did not ask for the usage itself is not given the chunk
 * the gateway asked for, which has no choices (a loop that reads `choices[0]` of every chunk, right against
 * OpenAI, would fail on it). Its other chunks keep their `usage: null`, a value the SDKs' chunk type allows.
 */
function usageUnasked(body: Json): ((event: SseEvent) => boolean) | null {
  if (body.stream !== true) return null;
  if (isObject(body.stream_options) && body.stream_options.include_usage === true) return null;
  return (event) => !isUsageChunk(event.data);
}

function isUsageChunk(data: string): boolean {
  try {
    const chunk = JSON.parse(data) as unknown;
    return isObject(chunk) && Array.isArray(chunk.choices) && chunk.choices.length === 0 && isObject(chunk.usage);
  } catch {
    return false;
  }
}

export const OPENAI_ROUTES: GatewayRoute[] = [
  route('/chat/completions', 'openai.chat', { upstreamBody: countStream, clientEvents: usageUnasked }),
  route('/responses', 'openai.responses'),
  route('/embeddings', 'openai.embeddings'),
];
