/**
 * Tokens in, out and cached, as each API reports them in its answer, streamed or not:
 * - OpenAI chat completions: `usage.prompt_tokens`, `completion_tokens`, `prompt_tokens_details.cached_tokens`;
 *   a stream reports them in its last chunk when asked (`stream_options.include_usage`, which the gateway sets).
 * - OpenAI responses: `usage.input_tokens`, `output_tokens`, `input_tokens_details.cached_tokens`; a stream in
 *   its `response.completed` event's `response.usage`.
 * - OpenAI embeddings: `usage.prompt_tokens`, nothing out.
 * - Anthropic messages: `usage.input_tokens` (fresh input only), `cache_read_input_tokens` and
 *   `cache_creation_input_tokens` (both input too), `output_tokens`; a stream in `message_start`'s
 *   `message.usage` and then each `message_delta`'s cumulative `usage`.
 * Input here counts every input token, cached ones included; `cached` is the part read from the cache.
 */
import type { ModelApi } from '../store/contract';
import type { Tokens } from './prices';
import { sseJson } from './sse';

export interface Usage extends Tokens {
  /** The model the upstream says answered (it may name a dated version of the one asked for). */
  model: string | null;
}

type Json = Record<string, unknown>;
const num = (v: unknown): number | null => (typeof v === 'number' && Number.isFinite(v) ? v : null);
const obj = (v: unknown): Json => (v !== null && typeof v === 'object' ? (v as Json) : {});
const str = (v: unknown): string | null => (typeof v === 'string' ? v : null);

const NONE: Usage = { model: null, inputTokens: null, outputTokens: null, cachedTokens: null };

function openaiUsage(usage: Json, model: string | null): Usage {
  const input = num(usage.prompt_tokens) ?? num(usage.input_tokens);
  const output = num(usage.completion_tokens) ?? num(usage.output_tokens);
  const cached =
    num(obj(usage.prompt_tokens_details).cached_tokens) ?? num(obj(usage.input_tokens_details).cached_tokens);
  return { model, inputTokens: input, outputTokens: output ?? (input === null ? null : 0), cachedTokens: cached };
}

function anthropicUsage(usage: Json, model: string | null): Usage {
  const fresh = num(usage.input_tokens);
  const read = num(usage.cache_read_input_tokens);
  const written = num(usage.cache_creation_input_tokens);
  const input =
    fresh === null && read === null && written === null ? null : (fresh ?? 0) + (read ?? 0) + (written ?? 0);
  return { model, inputTokens: input, outputTokens: num(usage.output_tokens), cachedTokens: read };
}

/** The usage of an answer that was not streamed: its JSON body. */
export function usageOfBody(api: ModelApi, body: string): Usage {
  let json: Json;
  try {
    json = obj(JSON.parse(body));
  } catch {
    return NONE;
  }
  if (!('usage' in json)) return { ...NONE, model: str(json.model) };
  return api === 'anthropic.messages'
    ? anthropicUsage(obj(json.usage), str(json.model))
    : openaiUsage(obj(json.usage), str(json.model));
}

/** The usage of a streamed answer: its whole text, as the upstream sent it. */
export function usageOfStream(api: ModelApi, text: string): Usage {
  const events = sseJson(text);
  if (api === 'anthropic.messages') {
    let start: Json = {};
    let model: string | null = null;
    let output: number | null = null;
    for (const { json } of events) {
      if (json.type === 'message_start') {
        const message = obj(json.message);
        model = str(message.model);
        start = obj(message.usage);
        output = num(start.output_tokens);
      } else if (json.type === 'message_delta') {
        const delta = obj(json.usage);
        // Cumulative: the last delta's count is the answer's; input may be restated there too.
        output = num(delta.output_tokens) ?? output;
        start = { ...start, ...Object.fromEntries(Object.entries(delta).filter(([k]) => k !== 'output_tokens')) };
      }
    }
    return { ...anthropicUsage({ ...start, output_tokens: output }, model), model };
  }
  if (api === 'openai.responses') {
    for (const { json } of events.reverse()) {
      if (json.type === 'response.completed' || json.type === 'response.incomplete') {
        const response = obj(json.response);
        return openaiUsage(obj(response.usage), str(response.model));
      }
    }
    return NONE;
  }
  let model: string | null = null;
  for (const { json } of events) {
    model = str(json.model) ?? model;
    if (json.usage !== null && typeof json.usage === 'object') return openaiUsage(obj(json.usage), model);
  }
  return { ...NONE, model };
}
