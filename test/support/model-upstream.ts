/**
 * A stand-in for the model providers, ours, so no test reaches one: it speaks the OpenAI API (chat
 * completions, responses, embeddings) and the Anthropic API (messages), streamed (SSE) and not, and keeps its
 * own record of every call it answered, with the tokens it billed (a chat stream tells them only when asked,
 * by `stream_options.include_usage`, as OpenAI's does). Tokens are words: the input's (every string in the
 * messages or input) and the answer's (`echo: <the last input>`), so a test knows what each call costs
 * without a tokenizer. Behaviour a test can ask for, per call in order: `fail` (a 500), `cut`
 * (a stream that ends mid-answer, its socket destroyed), `hold` (answer only once released), `pause` (a stream
 * that sends its first half, then the rest only once released).
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface UpstreamCall {
  path: string;
  authorization: string | null;
  apiKey: string | null;
  body: Record<string, unknown>;
  /** The words of the last input string: what the answer echoes, and how a test tells calls apart. */
  prompt: string;
  inputTokens: number;
  outputTokens: number;
  cachedTokens: number;
  /** The exact bytes the stand-in sent as the answer's body. */
  sent: string;
}

export type Misbehaviour = 'fail' | 'cut' | 'hold' | 'pause';

export interface ModelUpstream {
  url: string;
  /** Every call answered in full (a failed or cut one is not), in arrival order. */
  calls: UpstreamCall[];
  /** Every request that arrived, answered or not. */
  received: number;
  /** What the next requests do, in order; each is taken by one request. */
  misbehave(...next: Misbehaviour[]): void;
  /** Lets every held answer, and every paused stream, go on. */
  release(): void;
  /** How many answers and streams are held or paused now, waiting for release(). */
  readonly waiting: number;
  /** Resolves once `n` requests have arrived. */
  arrived(n: number): Promise<void>;
  close(): Promise<void>;
}

const words = (text: string) => text.split(/\s+/).filter(Boolean);

function strings(value: unknown): string[] {
  if (typeof value === 'string') return [value];
  if (Array.isArray(value)) return value.flatMap(strings);
  if (value !== null && typeof value === 'object')
    return Object.entries(value).flatMap(([k, v]) => (k === 'role' || k === 'type' ? [] : strings(v)));
  return [];
}

async function readJson(req: IncomingMessage): Promise<Record<string, unknown>> {
  let text = '';
  for await (const chunk of req) text += chunk;
  return JSON.parse(text) as Record<string, unknown>;
}

const sse = (data: unknown, event?: string) =>
  `${event ? `event: ${event}\n` : ''}data: ${typeof data === 'string' ? data : JSON.stringify(data)}\n\n`;

/** The answer's body as SSE events, split where a real stream would be: one event per word. */
function streamed(
  path: string,
  model: string,
  answer: string[],
  inputTokens: number,
  cached: number,
  usageAsked: boolean,
): string[] {
  const id = `call_${Math.random().toString(36).slice(2, 10)}`;
  if (path === '/v1/messages') {
    return [
      sse(
        {
          type: 'message_start',
          message: {
            id,
            type: 'message',
            role: 'assistant',
            model,
            content: [],
            stop_reason: null,
            usage: { input_tokens: inputTokens - cached, cache_read_input_tokens: cached, output_tokens: 1 },
          },
        },
        'message_start',
      ),
      sse({ type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }, 'content_block_start'),
      ...answer.map((w, i) =>
        sse(
          { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: i === 0 ? w : ` ${w}` } },
          'content_block_delta',
        ),
      ),
      sse({ type: 'content_block_stop', index: 0 }, 'content_block_stop'),
      sse(
        {
          type: 'message_delta',
          delta: { stop_reason: 'end_turn', stop_sequence: null },
          usage: { output_tokens: answer.length },
        },
        'message_delta',
      ),
      sse({ type: 'message_stop' }, 'message_stop'),
    ];
  }
  if (path === '/v1/responses') {
    const usage = {
      input_tokens: inputTokens,
      input_tokens_details: { cached_tokens: cached },
      output_tokens: answer.length,
      total_tokens: inputTokens + answer.length,
    };
    return [
      sse({ type: 'response.created', response: { id, model, status: 'in_progress' } }, 'response.created'),
      ...answer.map((w, i) =>
        sse({ type: 'response.output_text.delta', delta: i === 0 ? w : ` ${w}` }, 'response.output_text.delta'),
      ),
      sse(
        {
          type: 'response.completed',
          response: {
            id,
            object: 'response',
            model,
            status: 'completed',
            output: [
              { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: answer.join(' ') }] },
            ],
            usage,
          },
        },
        'response.completed',
      ),
    ];
  }
  // As OpenAI: asked for usage, every chunk has `usage: null` and one more chunk, with no choices, has the usage.
  const chunk = (delta: Record<string, unknown>, finish: string | null) => ({
    id,
    object: 'chat.completion.chunk',
    created: 1_700_000_000,
    model,
    choices: [{ index: 0, delta, finish_reason: finish }],
    ...(usageAsked ? { usage: null } : {}),
  });
  return [
    sse(chunk({ role: 'assistant', content: '' }, null)),
    ...answer.map((w, i) => sse(chunk({ content: i === 0 ? w : ` ${w}` }, null))),
    sse(chunk({}, 'stop')),
    ...(usageAsked
      ? [
          sse({
            id,
            object: 'chat.completion.chunk',
            created: 1_700_000_000,
            model,
            choices: [],
            usage: {
              prompt_tokens: inputTokens,
              completion_tokens: answer.length,
              total_tokens: inputTokens + answer.length,
              prompt_tokens_details: { cached_tokens: cached },
            },
          }),
        ]
      : []),
    sse('[DONE]'),
  ];
}

function whole(path: string, model: string, answer: string[], inputTokens: number, cached: number): unknown {
  const text = answer.join(' ');
  const id = `call_${Math.random().toString(36).slice(2, 10)}`;
  if (path === '/v1/messages')
    return {
      id,
      type: 'message',
      role: 'assistant',
      model,
      content: [{ type: 'text', text }],
      stop_reason: 'end_turn',
      stop_sequence: null,
      usage: { input_tokens: inputTokens - cached, cache_read_input_tokens: cached, output_tokens: answer.length },
    };
  if (path === '/v1/responses')
    return {
      id,
      object: 'response',
      model,
      status: 'completed',
      output: [{ type: 'message', role: 'assistant', content: [{ type: 'output_text', text }] }],
      usage: {
        input_tokens: inputTokens,
        input_tokens_details: { cached_tokens: cached },
        output_tokens: answer.length,
        total_tokens: inputTokens + answer.length,
      },
    };
  if (path === '/v1/embeddings')
    return {
      object: 'list',
      model,
      data: [{ object: 'embedding', index: 0, embedding: [0.1, 0.2, 0.3] }],
      usage: { prompt_tokens: inputTokens, total_tokens: inputTokens },
    };
  return {
    id,
    object: 'chat.completion',
    created: 1_700_000_000,
    model,
    choices: [{ index: 0, message: { role: 'assistant', content: text }, finish_reason: 'stop' }],
    usage: {
      prompt_tokens: inputTokens,
      completion_tokens: answer.length,
      total_tokens: inputTokens + answer.length,
      prompt_tokens_details: { cached_tokens: cached },
    },
  };
}

/**
 * Starts the stand-in on a loopback port: `port`, for a server configured before the test started (the browser
 * suite's dashboard), else a free one. `onAnswered` is told of each call once its answer is sent. `eventGapMs`
 * spaces a stream's events, so each reaches the reader on its own rather than packed into one read.
 */
export async function startModelUpstream(
  options: { onAnswered?: (call: UpstreamCall) => void; port?: number; eventGapMs?: number } = {},
): Promise<ModelUpstream> {
  const calls: UpstreamCall[] = [];
  const plan: Misbehaviour[] = [];
  let held: (() => void)[] = [];
  let received = 0;
  const waiters: { n: number; resolve: () => void }[] = [];
  const server: Server = createServer(async (req, res) => {
    received++;
    for (const w of waiters.filter((x) => received >= x.n)) w.resolve();
    const path = (req.url ?? '').replace(/^\/v1\/v1\//, '/v1/');
    const body = await readJson(req);
    const mode = plan.shift();
    if (mode === 'hold') await new Promise<void>((resolve) => held.push(resolve));
    if (mode === 'fail') {
      res.writeHead(500, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: 'the stand-in failed on purpose', type: 'server_error' } }));
      return;
    }
    const inputs = strings(path === '/v1/messages' || path === '/v1/chat/completions' ? body.messages : body.input);
    const prompt = inputs.at(-1) ?? '';
    const inputTokens =
      inputs.reduce((n, s) => n + words(s).length, 0) +
      (typeof body.system === 'string' ? words(body.system).length : 0);
    // A prompt that says "cached" was, by the stand-in's rule, half served from its cache.
    const cached = prompt.includes('cached') ? Math.floor(inputTokens / 2) : 0;
    const model = String(body.model ?? 'stand-in');
    const embedding = path === '/v1/embeddings';
    const answer = embedding ? [] : ['echo:', ...words(prompt)];
    const call: UpstreamCall = {
      path,
      authorization: req.headers.authorization ?? null,
      apiKey: (req.headers['x-api-key'] as string | undefined) ?? null,
      body,
      prompt,
      inputTokens,
      outputTokens: answer.length,
      cachedTokens: cached,
      sent: '',
    };
    if (body.stream === true) {
      const asked = body.stream_options as { include_usage?: unknown } | null | undefined;
      const events = streamed(path, model, answer, inputTokens, cached, asked?.include_usage === true);
      res.writeHead(200, { 'content-type': 'text/event-stream', 'x-request-id': `req_${calls.length + 1}` });
      if (mode === 'cut') {
        res.write(events.slice(0, 2).join(''));
        // Let the head and the first events reach the client, so the cut is mid-stream.
        await new Promise((r) => setTimeout(r, 50));
        res.destroy();
        return;
      }
      for (const [i, e] of events.entries()) {
        if (mode === 'pause' && i === Math.floor(events.length / 2))
          await new Promise<void>((resolve) => held.push(resolve));
        res.write(e);
        call.sent += e;
        await new Promise((r) => (options.eventGapMs ? setTimeout(r, options.eventGapMs) : setImmediate(r)));
      }
      res.end();
    } else {
      call.sent = JSON.stringify(whole(path, model, answer, inputTokens, cached));
      res.writeHead(200, { 'content-type': 'application/json', 'x-request-id': `req_${calls.length + 1}` });
      res.end(call.sent);
    }
    calls.push(call);
    options.onAnswered?.(call);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, '127.0.0.1', resolve);
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    calls,
    get received() {
      return received;
    },
    get waiting() {
      return held.length;
    },
    misbehave: (...next) => plan.push(...next),
    release() {
      for (const go of held) go();
      held = [];
    },
    arrived: (n) => (received >= n ? Promise.resolve() : new Promise<void>((resolve) => waiters.push({ n, resolve }))),
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
