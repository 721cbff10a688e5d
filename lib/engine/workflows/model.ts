/**
 * The model call behind the agent-batch workflow. Two clients, one interface: a simulated model (no network,
 * output derived from the prompt alone, latency and failure rate settable) for demos and tests, and an
 * OpenAI-compatible chat-completions endpoint when one is configured. Either way the step's idempotency key
 * is handed over, so a receiver that honours it closes the crash window between the call and the commit.
 */
import { createHash } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { InvalidInputError, ModelError } from '../../errors';

export interface ModelCall {
  idempotencyKey: string;
  signal: AbortSignal;
}

/** What a step commits: plain JSON. Token counts are null when an endpoint does not report them. */
export interface ModelOutput {
  model: string;
  text: string;
  promptTokens: number | null;
  completionTokens: number | null;
}

export interface ModelClient {
  readonly name: string;
  complete(prompt: string, call: ModelCall): Promise<ModelOutput>;
}

/** The simulated model's answer: a function of the prompt only, so a replayed step gives the same output. */
export function simulateCompletion(prompt: string): ModelOutput {
  const digest = createHash('sha256').update(prompt).digest();
  const words = prompt.trim().split(/\s+/).filter(Boolean);
  const head = words.slice(0, 8).join(' ');
  return {
    model: 'simulated',
    text: `summary of ${words.length} word(s): ${head}${words.length > 8 ? ' …' : ''} [${digest.toString('hex', 0, 4)}]`,
    promptTokens: Math.ceil(Buffer.byteLength(prompt) / 4),
    completionTokens: 16 + (digest.readUInt16BE(4) % 112),
  };
}

export function simulatedModel(
  options: { latencyMs?: number; failureRate?: number; random?: () => number } = {},
): ModelClient {
  const { latencyMs = 0, failureRate = 0, random = Math.random } = options;
  return {
    name: 'simulated',
    async complete(prompt, call) {
      // An aborted sleep rejects with an AbortError, which the run context does not retry.
      if (latencyMs > 0) await sleep(latencyMs, undefined, { signal: call.signal });
      else call.signal.throwIfAborted();
      if (failureRate > 0 && random() < failureRate) {
        throw new ModelError(`simulated transient model failure (failureRate ${failureRate})`, 503, true);
      }
      return simulateCompletion(prompt);
    },
  };
}

export interface HttpModelOptions {
  /** The chat-completions URL itself, e.g. http://127.0.0.1:8080/v1/chat/completions. */
  url: string;
  model: string;
  apiKey?: string;
  timeoutMs?: number;
}

export function httpModel(options: HttpModelOptions): ModelClient {
  const { url, model, apiKey, timeoutMs = 60_000 } = options;
  return {
    name: model,
    async complete(prompt, call) {
      const timeout = AbortSignal.timeout(timeoutMs);
      const headers: Record<string, string> = {
        'content-type': 'application/json',
        'idempotency-key': call.idempotencyKey,
      };
      if (apiKey) headers.authorization = `Bearer ${apiKey}`;
      let response: Response;
      let body: string;
      try {
        response = await fetch(url, {
          method: 'POST',
          headers,
          signal: AbortSignal.any([call.signal, timeout]),
          body: JSON.stringify({ model, messages: [{ role: 'user', content: prompt }] }),
        });
        body = await response.text();
      } catch (error) {
        // The step was interrupted (pause, cancel, lost lease): pass the reason up untouched, never retried.
        if (call.signal.aborted) throw call.signal.reason ?? error;
        if (timeout.aborted)
          throw new ModelError(`model request to ${url} timed out after ${timeoutMs} ms`, null, true, error);
        const reason =
          error instanceof Error ? (error.cause instanceof Error ? error.cause.message : error.message) : String(error);
        throw new ModelError(`model request to ${url} failed: ${reason}`, null, true, error);
      }
      if (!response.ok) {
        const transient = response.status >= 500 || response.status === 429;
        throw new ModelError(
          `model endpoint ${url} answered ${response.status} ${response.statusText}` +
            `${transient ? '' : ' (not transient: check WAYBILL_MODEL_NAME and WAYBILL_MODEL_API_KEY)'}: ${body.slice(0, 300)}`,
          response.status,
          transient,
        );
      }
      return parseCompletion(body, url, model);
    },
  };
}

/**
 * The fields of an OpenAI-style chat completion read here. Only a shape to read by: a 2xx body can be any
 * JSON, so each field is reached by optional chaining and its type checked before use.
 */
interface CompletionBody {
  model?: unknown;
  choices?: { message?: { content?: unknown } }[];
  usage?: { prompt_tokens?: unknown; completion_tokens?: unknown };
}

function parseCompletion(body: string, url: string, model: string): ModelOutput {
  let json: CompletionBody;
  try {
    json = JSON.parse(body) as CompletionBody;
  } catch {
    throw new ModelError(
      `model endpoint ${url} answered 2xx with a body that is not JSON: ${body.slice(0, 200)}`,
      null,
      true,
    );
  }
  const text = json?.choices?.[0]?.message?.content;
  if (typeof text !== 'string') {
    throw new ModelError(
      `model endpoint ${url} answered without choices[0].message.content: ${body.slice(0, 200)}`,
      null,
      true,
    );
  }
  const count = (value: unknown) => (typeof value === 'number' && Number.isFinite(value) ? value : null);
  return {
    model: typeof json.model === 'string' ? json.model : model,
    text,
    promptTokens: count(json.usage?.prompt_tokens),
    completionTokens: count(json.usage?.completion_tokens),
  };
}

/** The model settings as lib/config parses them; only lib/config reads process.env. */
export interface ModelEnv {
  WAYBILL_MODEL_URL?: string;
  WAYBILL_MODEL_NAME?: string;
  WAYBILL_MODEL_API_KEY?: string;
  WAYBILL_MODEL_TIMEOUT_MS?: number;
}

/** The configured endpoint, or undefined when none is (agent-batch then uses the simulated model). */
export function modelFromEnv(env: ModelEnv): ModelClient | undefined {
  if (!env.WAYBILL_MODEL_URL) return undefined;
  if (!env.WAYBILL_MODEL_NAME) throw new InvalidInputError('WAYBILL_MODEL_NAME must be set when WAYBILL_MODEL_URL is');
  return httpModel({
    url: env.WAYBILL_MODEL_URL,
    model: env.WAYBILL_MODEL_NAME,
    apiKey: env.WAYBILL_MODEL_API_KEY || undefined,
    timeoutMs: env.WAYBILL_MODEL_TIMEOUT_MS,
  });
}
