/**
 * What a model request's body may be sent as, over real HTTP on every backend: the control API's rule
 * (lib/domain/json-media-type.ts) — JSON, a charset only if UTF-8, or no Content-Type at all. Anything else is
 * 415 in the provider's own error shape (the SDK reads it as its own error), with nothing recorded and nothing
 * sent upstream: the stand-in counts every request that reaches it, and the store's model_calls stays empty. So is
 * every other refusal of the gateway's: the SDK of the route asked raises its own error with the gateway's words.
 */
import OpenAI from 'openai';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parseConfig } from '../../lib/config';
import { loadPriceTable } from '../../lib/gateway/prices';
import { type GatewayServer, startGatewayServer } from '../../lib/gateway/server';
import { backends, type StoreHandle } from '../support/backends';
import { type ModelUpstream, startModelUpstream } from '../support/model-upstream';

const list = await backends();
const OPERATOR = 'operator-token-of-the-content-type-tests';

const CHAT = { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'ct hello' }] };
const MESSAGE = { model: 'claude-haiku-4-5', max_tokens: 16, messages: [{ role: 'user', content: 'ct hi' }] };

describe.each(list)('the gateway and a Content-Type on $name', (backend) => {
  let h: StoreHandle;
  let upstream: ModelUpstream;
  let gateway: GatewayServer;

  beforeEach(async () => {
    h = await backend.open();
    upstream = await startModelUpstream();
    const cfg = parseConfig({
      DATABASE_URL: 'file:unused.db',
      WAYBILL_OPERATOR_TOKEN: OPERATOR,
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

  /** A request as a client sends it: the body as bytes, so that fetch adds no Content-Type of its own. */
  async function send(path: string, body: unknown, contentType: string | null, key: string) {
    const response = await fetch(`${gateway.url}${path}`, {
      method: 'POST',
      body: new TextEncoder().encode(JSON.stringify(body)),
      headers: {
        authorization: `Bearer ${OPERATOR}`,
        'idempotency-key': key,
        ...(contentType === null ? {} : { 'content-type': contentType }),
      },
    });
    return { status: response.status, body: (await response.json()) as unknown };
  }
  const recorded = async () =>
    Number((await h.rows<{ n: number | string }>('SELECT count(*) AS n FROM model_calls'))[0]!.n);

  it('refuses text/plain, a form and latin1 with 415 in each SDK shape; records nothing, asks nobody', async () => {
    expect(await send('/v1/chat/completions', CHAT, 'text/plain', 'ct:step:0')).toEqual({
      status: 415,
      body: {
        error: {
          message:
            'Content-Type "text/plain" is not JSON: send application/json (or application/<name>+json), or no Content-Type; nothing was sent',
          type: 'invalid_request_error',
          param: null,
          code: 'UNSUPPORTED_MEDIA_TYPE',
        },
      },
    });
    // curl -d without -H sends this one.
    const form = await send('/v1/embeddings', { model: 'm', input: 'ct' }, 'application/x-www-form-urlencoded', 'ct:e');
    expect(form.status).toBe(415);
    expect(form.body).toMatchObject({ error: { type: 'invalid_request_error', code: 'UNSUPPORTED_MEDIA_TYPE' } });
    expect(await send('/v1/messages', MESSAGE, 'text/plain; charset=utf-8', 'ct:step:1')).toEqual({
      status: 415,
      body: {
        type: 'error',
        error: {
          type: 'invalid_request_error',
          message:
            'Content-Type "text/plain; charset=utf-8" is not JSON: send application/json (or application/<name>+json), or no Content-Type; nothing was sent',
        },
      },
    });
    const latin1 = await send(
      '/v1/responses',
      { model: 'gpt-4o', input: 'ct' },
      'application/json; charset=latin1',
      'ct:r',
    );
    expect(latin1.status).toBe(415);
    expect(latin1.body).toMatchObject({ error: { message: expect.stringMatching(/is not UTF-8/) } });

    expect(upstream.received).toBe(0);
    expect(await recorded()).toBe(0);
    expect(await h.store.listModelCalls({ runId: 'ct' })).toEqual([]);
  });

  it('answers every refusal in its route SDK shape, and an unknown route in OpenAI shape', async () => {
    const raw = async (path: string, init: RequestInit & { headers?: Record<string, string> }) => {
      const response = await fetch(`${gateway.url}${path}`, {
        ...init,
        headers: { authorization: `Bearer ${OPERATOR}`, 'content-type': 'application/json', ...init.headers },
      });
      return { status: response.status, body: (await response.json()) as Record<string, unknown> };
    };
    const anthropic = (type: string, message: RegExp) => ({
      type: 'error',
      error: { type, message: expect.stringMatching(message) },
    });
    const openai = (type: string, code: string, message: RegExp) => ({
      error: { message: expect.stringMatching(message), type, param: null, code },
    });
    expect(await raw('/v1/messages', { method: 'POST', body: '{"model":' })).toEqual({
      status: 400,
      body: anthropic('invalid_request_error', /^the request body is not JSON/),
    });
    expect(await raw('/v1/messages', { method: 'GET' })).toEqual({
      status: 405,
      body: anthropic('invalid_request_error', /takes POST only/),
    });
    expect(
      await raw('/v1/messages', {
        method: 'POST',
        body: JSON.stringify(MESSAGE),
        headers: { authorization: 'Bearer x' },
      }),
    ).toMatchObject({ status: 401, body: anthropic('authentication_error', /./) });
    expect(
      await raw('/v1/chat/completions', {
        method: 'POST',
        body: JSON.stringify(CHAT),
        headers: { 'idempotency-key': 'k'.repeat(5000) },
      }),
    ).toEqual({ status: 400, body: openai('invalid_request_error', 'INVALID_INPUT', /Idempotency-Key/) });
    expect(await raw('/v1/nope', { method: 'POST', body: '{}' })).toEqual({
      status: 404,
      body: openai('not_found_error', 'NOT_FOUND', /^the gateway serves POST \/v1\/chat\/completions/),
    });
    expect(upstream.received).toBe(0);
    expect(await recorded()).toBe(0);
  });

  it('takes JSON with any UTF-8 charset, a +json type, or no Content-Type; and the OpenAI SDK as ever', async () => {
    for (const [n, contentType] of [
      [0, 'application/json; charset=utf-8'],
      [1, 'Application/JSON; Charset="UTF-8"'],
      [2, 'application/vnd.x+json'],
      [3, null],
    ] as const) {
      const answer = await send('/v1/chat/completions', CHAT, contentType, `ok:step:${n}`);
      expect([contentType, answer.status]).toEqual([contentType, 200]);
    }
    expect((await send('/v1/messages', MESSAGE, null, 'ok:step:4')).status).toBe(200);
    const sdk = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: OPERATOR, maxRetries: 0 });
    const done = await sdk.chat.completions.create(
      { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'ok sdk' }] },
      { headers: { 'Idempotency-Key': 'ok:step:5' } },
    );
    expect(done.choices[0]!.message.content).toBe('echo: ok sdk');
    expect(upstream.received).toBe(6);
    expect(await recorded()).toBe(6);
  });
});
