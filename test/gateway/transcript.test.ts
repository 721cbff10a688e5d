/**
 * A step's transcript of its streamed model calls (lib/gateway/transcript.ts), on every backend: the real
 * SDKs stream through the gateway from the stand-in upstream, and the transcript read back from the store's
 * chunks is exactly the deltas the SDK was given, for OpenAI chat, OpenAI responses and Anthropic messages;
 * after a replay it is the same text, and the step's own stream sits beside it.
 */
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parseConfig } from '../../lib/config';
import { loadPriceTable } from '../../lib/gateway/prices';
import { type GatewayServer, startGatewayServer } from '../../lib/gateway/server';
import { stepTranscript, streamedText } from '../../lib/gateway/transcript';
import { backends, type StoreHandle } from '../support/backends';
import { type ModelUpstream, startModelUpstream } from '../support/model-upstream';

const list = await backends();
const OPERATOR = 'operator-token-for-the-transcript-tests';

describe.each(list)('step transcripts on $name', (backend) => {
  let h: StoreHandle;
  let upstream: ModelUpstream;
  let gateway: GatewayServer;

  beforeEach(async () => {
    h = await backend.open();
    upstream = await startModelUpstream();
    const cfg = parseConfig({
      DATABASE_URL: 'file:unused.db',
      WAYBILL_OPERATOR_TOKEN: OPERATOR,
      WAYBILL_SESSION_SECRET: 'a-session-secret-of-the-tests',
      WAYBILL_GATEWAY_OPENAI_URL: `${upstream.url}/v1`,
      WAYBILL_GATEWAY_ANTHROPIC_URL: upstream.url,
    });
    gateway = await startGatewayServer(
      { store: h.store, settings: cfg, prices: loadPriceTable(undefined), auth: cfg, pollMs: 10 },
      '127.0.0.1',
      0,
    );
  });
  afterEach(async () => {
    await gateway.close();
    await upstream.close();
    await h.close();
  });

  const openai = () => new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: OPERATOR, maxRetries: 0 });
  const keyed = (key: string) => ({ headers: { 'Idempotency-Key': key } });

  it('is the concatenated deltas of a streamed chat completion, and the same after a replay', async () => {
    const body = {
      model: 'gpt-4o-mini',
      messages: [{ role: 'user' as const, content: 'tell the tale of seven small words' }],
      stream: true as const,
    };
    const read = async () => {
      let text = '';
      for await (const chunk of await openai().chat.completions.create(body, keyed('r1:step:4')))
        text += chunk.choices[0]?.delta.content ?? '';
      return text;
    };
    const deltas = await read();
    expect(deltas).toBe('echo: tell the tale of seven small words');
    const transcript = await stepTranscript(h.store, 'r1', 4);
    expect(transcript.calls).toHaveLength(1);
    expect(transcript.calls[0]).toMatchObject({ api: 'openai.chat', model: 'gpt-4o-mini', complete: true });
    expect(transcript.calls[0]!.text).toBe(deltas);
    expect(await read()).toBe(deltas);
    expect(upstream.calls).toHaveLength(1);
    expect(await stepTranscript(h.store, 'r1', 4)).toEqual(transcript);
    expect(await stepTranscript(h.store, 'r1', 3)).toEqual({ own: null, calls: [] });
  });

  it("reads responses and Anthropic text deltas, and shows the step's own stream beside them", async () => {
    let responses = '';
    const rs = await openai().responses.create(
      { model: 'gpt-4o-mini', input: 'three words here', stream: true },
      keyed('r2:step:0'),
    );
    for await (const e of rs) if (e.type === 'response.output_text.delta') responses += e.delta;
    let messages = '';
    const anthropic = new Anthropic({ baseURL: gateway.url, apiKey: OPERATOR, maxRetries: 0 });
    const ms = await anthropic.messages.create(
      {
        model: 'claude-3-5-haiku-latest',
        max_tokens: 64,
        messages: [{ role: 'user', content: 'two more' }],
        stream: true,
      },
      keyed('r2:step:1'),
    );
    for await (const e of ms)
      if (e.type === 'content_block_delta' && e.delta.type === 'text_delta') messages += e.delta.text;
    await h.store.appendStepStream({ runId: 'r2', step: 0, attempt: 1, seq: 0, text: 'thinking…' });
    expect(responses).toBe('echo: three words here');
    expect(messages).toBe('echo: two more');
    const first = await stepTranscript(h.store, 'r2', 0);
    expect(first.own).toEqual({ attempt: 1, text: 'thinking…' });
    expect(first.calls.map((c) => [c.api, c.text])).toEqual([['openai.responses', responses]]);
    const second = await stepTranscript(h.store, 'r2', 1);
    expect(second.own).toBeNull();
    expect(second.calls.map((c) => [c.api, c.text])).toEqual([['anthropic.messages', messages]]);
  });

  it('shows only whole events of a stream still arriving', () => {
    const event = (content: string) => `data: ${JSON.stringify({ choices: [{ index: 0, delta: { content } }] })}\n\n`;
    const whole = `${event('Hel')}${event('lo')}`;
    expect(streamedText('openai.chat', whole)).toBe('Hello');
    expect(streamedText('openai.chat', `${whole}${event('!').slice(0, 20)}`)).toBe('Hello');
    expect(streamedText('openai.chat', `${whole}data: [DONE]\n\n`)).toBe('Hello');
  });
});
