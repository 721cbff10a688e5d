/**
 * A streamed chat completion is given as its client asked for it. The gateway asks OpenAI for every stream's
 * usage (`stream_options.include_usage`) to count it, and OpenAI then ends the stream with one more chunk that
 * has the usage and no choices: a client that did not ask is not given that chunk, live or replayed, so the
 * loop that is right against OpenAI (`chunk.choices[0].delta`) is right through the gateway; a client that
 * asked is given it, and its replay is the upstream's bytes. On every backend, with the official SDK and the
 * stand-in upstream, which sends the usage chunk only when asked, as OpenAI does.
 */
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import type { ChatCompletionChunk } from 'openai/resources/chat/completions';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type Config, parseConfig } from '../../lib/config';
import { loadPriceTable } from '../../lib/gateway/prices';
import { REPLAYED_HEADER } from '../../lib/gateway/record';
import { type GatewayServer, startGatewayServer } from '../../lib/gateway/server';
import { backends, type StoreHandle } from '../support/backends';
import { type ModelUpstream, startModelUpstream, type UpstreamCall } from '../support/model-upstream';

const list = await backends();
const OPERATOR = 'operator-token-of-the-stream-usage-tests';

/** The data of each event of a stream as the stand-in sent it, `[DONE]` left out. */
const sentChunks = (call: UpstreamCall) =>
  call.sent
    .split('\n\n')
    .filter((e) => e.startsWith('data: {'))
    .map((e) => JSON.parse(e.slice('data: '.length)) as ChatCompletionChunk);

/** The loop that is right against OpenAI for a stream that did not ask for usage: every chunk has a choice. */
async function naiveRead(stream: AsyncIterable<ChatCompletionChunk>) {
  const chunks: ChatCompletionChunk[] = [];
  let text = '';
  for await (const chunk of stream) {
    chunks.push(chunk);
    // biome-ignore lint/style/noNonNullAssertion: the client's own code, as it is written against OpenAI.
    text += chunk.choices[0]!.delta.content ?? '';
  }
  return { chunks, text };
}

/** Every read of the upstream's answer cut into pieces of `size` bytes, so events arrive split. */
function piecemeal(size: number): typeof fetch {
  return async (input, init) => {
    const answer = await fetch(input, init);
    if (answer.body === null) return answer;
    const reader = answer.body.getReader();
    const body = new ReadableStream<Uint8Array>({
      async pull(controller) {
        const { done, value } = await reader.read();
        if (done) return controller.close();
        for (let at = 0; at < value.length; at += size) controller.enqueue(value.slice(at, at + size));
      },
    });
    return new Response(body, { status: answer.status, headers: answer.headers });
  };
}

describe.each(list)('a streamed chat completion on $name', (backend) => {
  let h: StoreHandle;
  let upstream: ModelUpstream;
  let cfg: Config;
  const gateways: GatewayServer[] = [];

  const startGateway = async (fetcher?: typeof fetch) => {
    const gateway = await startGatewayServer(
      { store: h.store, settings: cfg, prices: loadPriceTable(undefined), auth: cfg, pollMs: 10, fetch: fetcher },
      '127.0.0.1',
      0,
    );
    gateways.push(gateway);
    return gateway;
  };

  beforeEach(async () => {
    h = await backend.open();
    upstream = await startModelUpstream();
    cfg = parseConfig({
      DATABASE_URL: 'file:unused.db',
      WAYBILL_OPERATOR_TOKEN: OPERATOR,
      WAYBILL_SESSION_SECRET: 'a-session-secret-of-the-tests',
      WAYBILL_GATEWAY_OPENAI_URL: `${upstream.url}/v1`,
      WAYBILL_GATEWAY_ANTHROPIC_URL: upstream.url,
    });
  });
  afterEach(async () => {
    for (const g of gateways.splice(0)) await g.close();
    await upstream.close();
    await h.close();
  });

  const openai = (g: GatewayServer) => new OpenAI({ baseURL: `${g.url}/v1`, apiKey: OPERATOR, maxRetries: 0 });
  const keyed = (key: string) => ({ headers: { 'Idempotency-Key': key } });
  const post = (g: GatewayServer, path: string, body: unknown, key: string) =>
    fetch(`${g.url}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${OPERATOR}`, 'idempotency-key': key },
      body: JSON.stringify(body),
    });
  const ask = (content: string) => ({
    model: 'gpt-4o-mini',
    messages: [{ role: 'user' as const, content }],
    stream: true as const,
  });
  /** What the stand-in answers a prompt with: `echo:` and its words, a chunk each, after a role chunk. */
  const answerWords = (prompt: string) => 1 + prompt.split(' ').length;

  it('gives a client that did not ask for usage only the content chunks, live and replayed; the ledger has the tokens', async () => {
    const gateway = await startGateway();
    const prompt = 'su these cached words stream';
    const key = 'su:step:0';
    const live = await naiveRead(await openai(gateway).chat.completions.create(ask(prompt), keyed(key)));
    expect(live.text).toBe(`echo: ${prompt}`);
    // A role chunk, a chunk per word, the finish chunk: each with its choice, none with usage.
    expect(live.chunks).toHaveLength(answerWords(prompt) + 2);
    expect(live.chunks.every((c) => c.choices.length === 1 && c.usage == null)).toBe(true);

    expect(upstream.calls).toHaveLength(1);
    const [sent] = upstream.calls;
    // The gateway asked for the usage, and the stand-in sent it in a last chunk of its own.
    expect(sent!.body.stream_options).toEqual({ include_usage: true });
    const upstreamChunks = sentChunks(sent!);
    expect(upstreamChunks.at(-1)).toMatchObject({ choices: [], usage: { prompt_tokens: sent!.inputTokens } });
    expect(live.chunks).toEqual(upstreamChunks.slice(0, -1));

    const row = await h.store.getModelCall(key);
    expect(row).toMatchObject({
      state: 'complete',
      inputTokens: sent!.inputTokens,
      outputTokens: sent!.outputTokens,
      cachedTokens: sent!.cachedTokens,
    });
    expect(row!.cachedTokens).toBeGreaterThan(0);

    const { data, response } = await openai(gateway).chat.completions.create(ask(prompt), keyed(key)).withResponse();
    expect(response.headers.get(REPLAYED_HEADER)).toBe('true');
    expect((await naiveRead(data)).chunks).toEqual(live.chunks);
    expect(upstream.calls).toHaveLength(1);
  });

  it("gives the same bytes live and replayed: the upstream's, less the usage event", async () => {
    const gateway = await startGateway();
    const body = ask('su raw bytes please');
    const live = await post(gateway, '/v1/chat/completions', body, 'su:step:1');
    const liveText = await live.text();
    const replayed = await post(gateway, '/v1/chat/completions', body, 'su:step:1');
    expect(replayed.headers.get(REPLAYED_HEADER)).toBe('true');
    expect(await replayed.text()).toBe(liveText);
    const events = upstream.calls[0]!.sent.split(/(?<=\n\n)/);
    const usageEvent = events.find((e) => e.includes('"choices":[]'));
    expect(usageEvent).toBeDefined();
    expect(liveText).toBe(events.filter((e) => e !== usageEvent).join(''));
    expect(liveText.endsWith('data: [DONE]\n\n')).toBe(true);
  });

  it('gives a client that asked for usage the usage chunk, live and replayed byte for byte', async () => {
    const gateway = await startGateway();
    const prompt = 'su count my tokens';
    const key = 'su:step:2';
    const body = { ...ask(prompt), stream_options: { include_usage: true } };
    const read = async (stream: AsyncIterable<ChatCompletionChunk>) => {
      const chunks: ChatCompletionChunk[] = [];
      for await (const chunk of stream) chunks.push(chunk);
      return chunks;
    };
    const live = await read(await openai(gateway).chat.completions.create(body, keyed(key)));
    const [sent] = upstream.calls;
    expect(sent!.body.stream_options).toEqual({ include_usage: true });
    expect(live).toHaveLength(answerWords(prompt) + 3);
    expect(live).toEqual(sentChunks(sent!));
    expect(live.at(-1)).toMatchObject({
      choices: [],
      usage: { prompt_tokens: sent!.inputTokens, completion_tokens: sent!.outputTokens },
    });
    expect(live.slice(0, -1).every((c) => c.choices.length === 1 && c.usage === null)).toBe(true);
    expect(await h.store.getModelCall(key)).toMatchObject({
      inputTokens: sent!.inputTokens,
      outputTokens: sent!.outputTokens,
    });

    const { data, response } = await openai(gateway).chat.completions.create(body, keyed(key)).withResponse();
    expect(response.headers.get(REPLAYED_HEADER)).toBe('true');
    expect(await read(data)).toEqual(live);
    const raw = await post(gateway, '/v1/chat/completions', body, key);
    expect(await raw.text()).toBe(sent!.sent);
    expect(upstream.calls).toHaveLength(1);
  });

  it('leaves the usage event out however the stream is cut into reads, and stores it whole', async () => {
    const gateway = await startGateway(piecemeal(7));
    const prompt = 'su split into small reads';
    const key = 'su:step:3';
    const live = await naiveRead(await openai(gateway).chat.completions.create(ask(prompt), keyed(key)));
    expect(live.chunks).toHaveLength(answerWords(prompt) + 2);
    expect(live.text).toBe(`echo: ${prompt}`);
    const [sent] = upstream.calls;
    const row = (await h.store.getModelCall(key))!;
    const stored = await h.store.readModelCallChunks(row.id);
    // Stored as the reads came, every one: the usage event among them, cut across reads.
    expect(stored.length).toBeGreaterThan(sentChunks(sent!).length);
    expect(stored.join('')).toBe(sent!.sent);
    expect(row).toMatchObject({ inputTokens: sent!.inputTokens, outputTokens: sent!.outputTokens });
    const replayed = await naiveRead(await openai(gateway).chat.completions.create(ask(prompt), keyed(key)));
    expect(replayed.chunks).toEqual(live.chunks);
  });

  it('passes the responses and Anthropic streams on as they came, live and replayed: nothing is added to them', async () => {
    const gateway = await startGateway();
    const responses = { model: 'gpt-4o-mini', input: 'su respond', stream: true };
    const messages = {
      model: 'claude-haiku-4-5',
      max_tokens: 16,
      messages: [{ role: 'user', content: 'su message' }],
      stream: true,
    };
    for (const [path, body, key] of [
      ['/v1/responses', responses, 'su:step:4'],
      ['/v1/messages', messages, 'su:step:5'],
    ] as const) {
      const live = await (await post(gateway, path, body, key)).text();
      const replayed = await post(gateway, path, body, key);
      expect(replayed.headers.get(REPLAYED_HEADER)).toBe('true');
      expect(await replayed.text()).toBe(live);
      const call = upstream.calls.at(-1)!;
      expect(call.body).toEqual(body);
      expect(live).toBe(call.sent);
      expect(await h.store.getModelCall(key)).toMatchObject({
        inputTokens: call.inputTokens,
        outputTokens: call.outputTokens,
      });
    }
    const anthropic = new Anthropic({ baseURL: gateway.url, apiKey: OPERATOR, maxRetries: 0 });
    const { stream: _, ...unstreamed } = messages;
    const s = anthropic.messages.stream(unstreamed as Anthropic.MessageCreateParams, keyed('su:step:5'));
    expect(await s.finalText()).toBe('echo: su message');
    expect(upstream.calls).toHaveLength(2);
  });
});
