/**
 * Issue 26, the model gateway served by the dashboard: the official `openai` and `@anthropic-ai/sdk` clients,
 * pointed at the secured dashboard server (`${url}/v1` and `${url}`) with an Idempotency-Key, reach the
 * stand-in upstream that playwright.config.ts named in its WAYBILL_GATEWAY_* settings, through the same
 * handler `waybill gateway` serves. Each call is counted where it lands: the upstream's own record.
 */
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { signRunToken } from '../lib/auth/run-token';
import { parseConfig } from '../lib/config';
import { REPLAYED_HEADER } from '../lib/gateway/record';
import { type ModelUpstream, startModelUpstream } from '../test/support/model-upstream';
import { E2E_OPERATOR_TOKEN, E2E_PROVIDER_KEY, E2E_VIEWER_TOKEN, e2eUpstreamPort } from './support/prepare';
import { securedURL } from './support/secured';
import { expect, noChromium, test, uniqueId } from './support/test';

test.skip(noChromium, 'no chromium');

let upstream: ModelUpstream;

test.beforeAll(async () => {
  // Events spaced, so the first half of a paused stream reaches the gateway as several reads, not one.
  upstream = await startModelUpstream({ port: e2eUpstreamPort(), eventGapMs: 40 });
});

test.afterAll(async () => {
  upstream?.release();
  await upstream?.close();
});

const openai = (apiKey = E2E_OPERATOR_TOKEN) => new OpenAI({ baseURL: `${securedURL}/v1`, apiKey, maxRetries: 0 });
const keyed = (key: string) => ({ headers: { 'Idempotency-Key': key } });
const chat = (content: string) => ({
  model: 'gpt-4o-mini',
  messages: [{ role: 'user' as const, content }],
  stream: false as const,
});

test('the dashboard serves the gateway: one upstream call per key, replays from the store, 422 on another body', async () => {
  const key = `${uniqueId('e2e-gw')}:step:0`;
  const before = upstream.calls.length;

  const first = await openai().chat.completions.create(chat('dashboard hello'), keyed(key)).withResponse();
  expect(first.data.choices[0]!.message.content).toBe('echo: dashboard hello');
  expect(first.response.headers.get(REPLAYED_HEADER)).toBeNull();
  expect(upstream.calls.length - before).toBe(1);
  // The provider's key went upstream; the caller's token did not.
  expect(upstream.calls.at(-1)!.authorization).toBe(`Bearer ${E2E_PROVIDER_KEY}`);

  const again = await openai().chat.completions.create(chat('dashboard hello'), keyed(key)).withResponse();
  expect(again.response.headers.get(REPLAYED_HEADER)).toBe('true');
  expect(again.data).toEqual(first.data);
  expect(upstream.calls.length - before).toBe(1);

  const other = await openai()
    .chat.completions.create(chat('dashboard, another body'), keyed(key))
    .catch((error: unknown) => error);
  expect(other).toBeInstanceOf(OpenAI.APIError);
  expect((other as InstanceType<typeof OpenAI.APIError>).status).toBe(422);
  expect(upstream.calls.length - before).toBe(1);
});

test('a streamed answer streams through the dashboard as it arrives, and is replayed the same', async () => {
  const key = `${uniqueId('e2e-gw')}:step:1`;
  const body = { ...chat('alpha bravo charlie delta echo foxtrot golf hotel'), stream: true as const };
  const before = upstream.calls.length;
  // The stand-in sends the first half of its events, then waits: what the SDK reads meanwhile came through
  // Next as it arrived, not once the answer was whole. (All of the half but the gateway's latest read: it holds
  // that back until the next read, or until the answer is stored.)
  upstream.misbehave('pause');
  const stream = await openai().chat.completions.create(body, keyed(key));
  let received = '';
  const reading = (async () => {
    for await (const chunk of stream) received += chunk.choices[0]?.delta.content ?? '';
  })();
  await expect.poll(() => upstream.waiting, { timeout: 5_000 }).toBe(1);
  await expect.poll(() => received, { timeout: 5_000 }).toBe('echo: alpha bravo charlie');
  upstream.release();
  await reading;
  const whole = 'echo: alpha bravo charlie delta echo foxtrot golf hotel';
  expect(received).toBe(whole);
  expect(upstream.calls.length - before).toBe(1);

  const replay = await fetch(`${securedURL}/v1/chat/completions`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      authorization: `Bearer ${E2E_OPERATOR_TOKEN}`,
      'idempotency-key': key,
    },
    body: JSON.stringify(body),
  });
  expect(replay.headers.get('content-type')).toBe('text/event-stream');
  expect(replay.headers.get(REPLAYED_HEADER)).toBe('true');
  // The stand-in's bytes, less the usage chunk the gateway asked for and this client did not.
  const usageChunk = /data: \{[^\n]*"choices":\[\],"usage":\{[^\n]*\n\n/;
  expect(upstream.calls.at(-1)!.sent).toMatch(usageChunk);
  expect(await replay.text()).toBe(upstream.calls.at(-1)!.sent.replace(usageChunk, ''));
  expect(upstream.calls.length - before).toBe(1);
});

test('the Anthropic SDK is served at the dashboard root, streamed and not', async () => {
  const anthropic = new Anthropic({ baseURL: securedURL, apiKey: E2E_OPERATOR_TOKEN, maxRetries: 0 });
  const run = uniqueId('e2e-gw');
  const ask = { model: 'claude-haiku-4-5', max_tokens: 64, messages: [{ role: 'user' as const, content: 'hi there' }] };
  const before = upstream.calls.length;
  const m1 = await anthropic.messages.create(ask, keyed(`${run}:step:0`));
  const m2 = await anthropic.messages.create(ask, keyed(`${run}:step:0`));
  expect(m1.content).toEqual([{ type: 'text', text: 'echo: hi there' }]);
  expect(m2).toEqual(m1);
  for (let i = 0; i < 2; i++)
    expect(await anthropic.messages.stream(ask, keyed(`${run}:step:1`)).finalText()).toBe('echo: hi there');
  expect(upstream.calls.slice(before).map((c) => [c.path, c.apiKey])).toEqual([
    ['/v1/messages', E2E_PROVIDER_KEY],
    ['/v1/messages', E2E_PROVIDER_KEY],
  ]);
});

test("who may call: the operator and a run token on its own run's keys; not a viewer, nobody, another site", async () => {
  const run = uniqueId('e2e-gw');
  const cfg = parseConfig({
    DATABASE_URL: 'file:unused.db',
    WAYBILL_OPERATOR_TOKEN: E2E_OPERATOR_TOKEN,
    WAYBILL_VIEWER_TOKEN: E2E_VIEWER_TOKEN,
  });
  const runToken = signRunToken(cfg, run, 600_000, Date.now()).token;
  const before = upstream.calls.length;
  const own = await openai(runToken).chat.completions.create(chat('run token'), keyed(`${run}:step:0`));
  expect(own.choices[0]!.message.content).toBe('echo: run token');

  const status = (apiKey: string, key: string, headers: Record<string, string> = {}) =>
    fetch(`${securedURL}/v1/chat/completions`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        authorization: `Bearer ${apiKey}`,
        'idempotency-key': key,
        ...headers,
      },
      body: JSON.stringify(chat('refused')),
    }).then((r) => r.status);
  expect(await status(runToken, `${uniqueId('e2e-gw-other')}:step:0`)).toBe(403);
  expect(await status(E2E_VIEWER_TOKEN, `${run}:step:1`)).toBe(403);
  expect(await status('not-a-token', `${run}:step:1`)).toBe(401);
  expect(await status(E2E_OPERATOR_TOKEN, `${run}:step:1`, { origin: 'https://evil.example' })).toBe(403);
  expect(upstream.calls.length - before).toBe(1);
});
