/**
 * The model gateway in this process, over a real store on every backend, with the official SDKs (openai,
 * @anthropic-ai/sdk) pointed at it by baseURL and an Idempotency-Key header, and a stand-in upstream that
 * counts what it answered. Each request goes over real HTTP twice: SDK → gateway → stand-in.
 */
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { signRunToken } from '../../lib/auth/run-token';
import { type Config, parseConfig } from '../../lib/config';
import { rewind } from '../../lib/control';
import { Worker } from '../../lib/engine/worker';
import { defineWorkflow, WorkflowRegistry } from '../../lib/engine/workflow';
import { runUsage } from '../../lib/gateway/ledger';
import { loadPriceTable } from '../../lib/gateway/prices';
import { REPLAYED_HEADER } from '../../lib/gateway/record';
import { type GatewayServer, startGatewayServer } from '../../lib/gateway/server';
import type { RunStore, Store } from '../../lib/store/contract';
import { backends, type StoreHandle, untilRun } from '../support/backends';
import { type ModelUpstream, startModelUpstream } from '../support/model-upstream';

const list = await backends();
const OPERATOR = 'operator-token-for-the-gateway-tests';
/**
 * A chat stream's bytes as its client, which did not ask for the usage, is given them: the stand-in's, less the
 * usage chunk the gateway asked for (test/gateway/stream-usage.test.ts).
 */
const lessUsage = (sent: string) => sent.replace(/data: \{[^\n]*"choices":\[\],"usage":\{[^\n]*\n\n/, '');
const PROVIDER_KEY = 'sk-provider-only-the-gateway-holds';

describe.each(list)('the model gateway on $name', (backend) => {
  let h: StoreHandle;
  let upstream: ModelUpstream;
  let gateway: GatewayServer;
  let cfg: Config;
  const waited: string[] = [];

  beforeEach(async () => {
    h = await backend.open();
    upstream = await startModelUpstream();
    cfg = parseConfig({
      DATABASE_URL: 'file:unused.db',
      WAYBILL_OPERATOR_TOKEN: OPERATOR,
      WAYBILL_SESSION_SECRET: 'a-session-secret-of-the-tests',
      WAYBILL_GATEWAY_OPENAI_URL: `${upstream.url}/v1`,
      WAYBILL_GATEWAY_OPENAI_KEY: PROVIDER_KEY,
      WAYBILL_GATEWAY_ANTHROPIC_URL: upstream.url,
      WAYBILL_GATEWAY_ANTHROPIC_KEY: PROVIDER_KEY,
      WAYBILL_GATEWAY_LEASE_MS: '2000',
    });
    waited.length = 0;
    gateway = await startGatewayServer(
      {
        store: h.store,
        settings: cfg,
        prices: loadPriceTable(undefined),
        auth: cfg,
        pollMs: 10,
        onWait: (key) => waited.push(key),
      },
      '127.0.0.1',
      0,
    );
  });
  afterEach(async () => {
    await gateway.close();
    await upstream.close();
    await h.close();
  });

  const runToken = (runId: string) => signRunToken(cfg, runId, 3_600_000, Date.now()).token;
  const openai = (apiKey = OPERATOR) => new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey, maxRetries: 0 });
  const anthropic = (apiKey = OPERATOR) => new Anthropic({ baseURL: gateway.url, apiKey, maxRetries: 0 });
  const keyed = (key: string) => ({ headers: { 'Idempotency-Key': key } });
  const chat = (content: string) => ({
    model: 'gpt-4o-mini',
    messages: [{ role: 'user' as const, content }],
    stream: false as const,
  });
  const chatStream = (content: string) => ({ ...chat(content), stream: true as const });
  const post = (path: string, body: unknown, headers: Record<string, string>) =>
    fetch(`${gateway.url}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${OPERATOR}`, ...headers },
      body: JSON.stringify(body),
    });

  it('answers a repeated request from the store: one upstream call, the same completion, the provider key upstream', async () => {
    const first = await openai().chat.completions.create(chat('r1 hello there'), keyed('r1:step:0'));
    const again = await openai().chat.completions.create(chat('r1 hello there'), keyed('r1:step:0'));
    expect(first.choices[0]!.message.content).toBe('echo: r1 hello there');
    expect(again).toEqual(first);
    expect(upstream.calls).toHaveLength(1);
    expect(upstream.calls[0]!.authorization).toBe(`Bearer ${PROVIDER_KEY}`);
    const raw = await post('/v1/chat/completions', chat('r1 hello there'), { 'idempotency-key': 'r1:step:0' });
    expect(raw.headers.get(REPLAYED_HEADER)).toBe('true');
    expect(await raw.text()).toBe(upstream.calls[0]!.sent);
    expect(upstream.calls).toHaveLength(1);
  });

  it('replays a streamed answer byte for byte, framed as it came, and the SDK reads it the same', async () => {
    const body = chatStream('r1 stream me please');
    const first = await post('/v1/chat/completions', body, { 'idempotency-key': 'r1:step:1' });
    expect(first.headers.get('content-type')).toBe('text/event-stream');
    const firstBytes = Buffer.from(await first.arrayBuffer());
    const again = await post('/v1/chat/completions', body, { 'idempotency-key': 'r1:step:1' });
    expect(again.headers.get('content-type')).toBe('text/event-stream');
    const againBytes = Buffer.from(await again.arrayBuffer());
    expect(againBytes.equals(firstBytes)).toBe(true);
    expect(firstBytes.toString('utf8')).toBe(lessUsage(upstream.calls[0]!.sent));
    // The gateway asked for the stream's usage, so the stand-in was sent include_usage.
    expect(upstream.calls[0]!.body.stream_options).toEqual({ include_usage: true });
    let text = '';
    const stream = await openai().chat.completions.create(body, keyed('r1:step:1'));
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
    expect(text).toBe('echo: r1 stream me please');
    expect(upstream.calls).toHaveLength(1);
  });

  it('serves the Anthropic SDK, streamed and not, and the responses and embeddings routes, each once upstream', async () => {
    const ask = { model: 'claude-haiku-4-5', max_tokens: 64, messages: [{ role: 'user' as const, content: 'r2 hi' }] };
    const m1 = await anthropic().messages.create(ask, keyed('r2:step:0'));
    const m2 = await anthropic().messages.create(ask, keyed('r2:step:0'));
    expect(m2).toEqual(m1);
    expect(m1.content).toEqual([{ type: 'text', text: 'echo: r2 hi' }]);
    for (let i = 0; i < 2; i++) {
      const s = anthropic().messages.stream(ask, keyed('r2:step:1'));
      expect(await s.finalText()).toBe('echo: r2 hi');
    }
    const r1 = await openai().responses.create({ model: 'gpt-4o', input: 'r2 respond' }, keyed('r2:step:2'));
    const r2 = await openai().responses.create({ model: 'gpt-4o', input: 'r2 respond' }, keyed('r2:step:2'));
    expect(r2.output_text).toBe('echo: r2 respond');
    expect(r2.id).toBe(r1.id);
    const e1 = await openai().embeddings.create({ model: 'text-embedding-3-small', input: 'r2 embed' }, keyed('r2:e'));
    const e2 = await openai().embeddings.create({ model: 'text-embedding-3-small', input: 'r2 embed' }, keyed('r2:e'));
    expect(e2).toEqual(e1);
    expect(upstream.calls.map((c) => [c.path, c.apiKey ?? c.authorization])).toEqual([
      ['/v1/messages', PROVIDER_KEY],
      ['/v1/messages', PROVIDER_KEY],
      ['/v1/responses', `Bearer ${PROVIDER_KEY}`],
      ['/v1/embeddings', `Bearer ${PROVIDER_KEY}`],
    ]);
  });

  it('refuses another body under a used key with 422 IDEMPOTENCY_KEY_REUSE, and asks nobody', async () => {
    await openai().chat.completions.create(chat('r1 first'), keyed('r1:step:3'));
    const other = await post('/v1/chat/completions', chat('r1 second'), { 'idempotency-key': 'r1:step:3' });
    expect(other.status).toBe(422);
    expect(((await other.json()) as { error: { code: string } }).error.code).toBe('IDEMPOTENCY_KEY_REUSE');
    await expect(openai().chat.completions.create(chat('r1 second'), keyed('r1:step:3'))).rejects.toMatchObject({
      status: 422,
    });
    expect(upstream.received).toBe(1);
  });

  it("holds a run token to its run's keys: another run's key is 403 and asks nobody; its own is answered", async () => {
    const sandbox = openai(runToken('run-a'));
    await expect(sandbox.chat.completions.create(chat('b secret'), keyed('run-b:step:0'))).rejects.toMatchObject({
      status: 403,
    });
    await expect(sandbox.chat.completions.create(chat('b secret'), keyed('shared-key'))).rejects.toMatchObject({
      status: 403,
    });
    expect(upstream.received).toBe(0);
    const own = await sandbox.chat.completions.create(chat('a mine'), keyed('run-a:step:0'));
    expect(own.choices[0]!.message.content).toBe('echo: a mine');
    const forged = `${runToken('run-a').slice(0, -4)}AAAA`;
    await expect(openai(forged).chat.completions.create(chat('a x'), keyed('run-a:step:1'))).rejects.toMatchObject({
      status: 401,
    });
    await expect(openai('nobody').chat.completions.create(chat('a x'))).rejects.toMatchObject({ status: 401 });
    expect(upstream.received).toBe(1);
    expect((await h.store.getModelCall('run-a:step:0'))?.runId).toBe('run-a');
  });

  it('makes one upstream call for two requests at once with one key; the second waits and gets the same answer', async () => {
    for (const stream of [false, true]) {
      const key = `r3:step:${stream ? 1 : 0}`;
      const before = upstream.calls.length;
      upstream.misbehave('hold');
      const body = stream ? chatStream(`r3 together ${stream}`) : chat(`r3 together ${stream}`);
      const first = post('/v1/chat/completions', body, { 'idempotency-key': key });
      await upstream.arrived(before + 1);
      const waits = waited.length;
      const second = post('/v1/chat/completions', body, { 'idempotency-key': key });
      for (const deadline = Date.now() + 30_000; waited.length === waits; ) {
        if (Date.now() > deadline) throw new Error(`the second request with ${key} never waited`);
        await new Promise((r) => setTimeout(r, 5));
      }
      expect(waited.at(-1)).toBe(key);
      upstream.release();
      const [a, b] = await Promise.all([first, second]);
      expect(await b.text()).toBe(await a.text());
      expect(upstream.calls.length).toBe(before + 1);
      expect(upstream.received).toBe(before + 1);
    }
  });

  it('stores no failed answer: a 500 or a cut stream is asked again on the retry, then kept', async () => {
    upstream.misbehave('fail');
    const failed = await post('/v1/chat/completions', chat('r4 flaky'), { 'idempotency-key': 'r4:step:0' });
    expect(failed.status).toBe(500);
    expect(await h.store.getModelCall('r4:step:0')).toBeUndefined();
    const ok = await openai().chat.completions.create(chat('r4 flaky'), keyed('r4:step:0'));
    expect(ok.choices[0]!.message.content).toBe('echo: r4 flaky');

    upstream.misbehave('cut');
    // Cut before its first event reached the gateway's client, or after: either way the client sees it fail.
    await expect(
      post('/v1/chat/completions', chatStream('r4 cut'), { 'idempotency-key': 'r4:step:1' }).then((r) => r.text()),
    ).rejects.toThrow();
    expect(await h.store.getModelCall('r4:step:1')).toBeUndefined();
    const whole = await post('/v1/chat/completions', chatStream('r4 cut'), { 'idempotency-key': 'r4:step:1' });
    expect(await whole.text()).toBe(lessUsage(upstream.calls.at(-1)!.sent));
    expect(upstream.received).toBe(4);
    expect(upstream.calls).toHaveLength(2);
    expect((await h.store.getModelCall('r4:step:1'))?.state).toBe('complete');
  });

  it("sums each run's tokens in the ledger exactly as the stand-in billed them, streamed and not, replays free", async () => {
    const client = openai();
    const ant = anthropic();
    for (const run of ['ledger-a', 'ledger-b']) {
      for (let n = 0; n < 3; n++) {
        const prompt = `${run} step ${n} ${n === 1 ? 'cached words here' : 'plain'}`;
        for (let again = 0; again < 2; again++) {
          await client.chat.completions.create(chat(prompt), keyed(`${run}:step:${n}`));
          const s = await client.chat.completions.create(chatStream(`${prompt} s`), keyed(`${run}:s${n}`));
          for await (const _ of s);
          await ant.messages
            .stream(
              { model: 'claude-haiku-4-5', max_tokens: 9, messages: [{ role: 'user', content: `${prompt} a` }] },
              keyed(`${run}:a${n}`),
            )
            .finalMessage();
        }
      }
      // One call without a key, by the run's own token: recorded for the ledger too.
      await openai(runToken(run)).chat.completions.create(chat(`${run} unkeyed`));
    }
    expect(upstream.calls).toHaveLength(20);
    for (const run of ['ledger-a', 'ledger-b']) {
      const billed = upstream.calls.filter((c) => c.prompt.startsWith(run));
      const usage = await runUsage(h.store, run);
      expect(usage.calls).toBe(10);
      expect(usage.inputTokens).toBe(billed.reduce((n, c) => n + c.inputTokens, 0));
      expect(usage.outputTokens).toBe(billed.reduce((n, c) => n + c.outputTokens, 0));
      expect(usage.cachedTokens).toBe(billed.reduce((n, c) => n + c.cachedTokens, 0));
      expect(usage.cachedTokens).toBeGreaterThan(0);
      expect(usage.unpriced).toBe(0);
      expect(usage.bySteps.map((s) => [s.step, s.usage.calls])).toEqual([
        [null, 7],
        [0, 1],
        [1, 1],
        [2, 1],
      ]);
    }
  });
  it('a rerun from step 1 asks the model again for steps 1 and 2 only; the first answers stay in the ledger', async () => {
    const asking = defineWorkflow({
      name: 'asking',
      input: z.object({}),
      totalSteps: 3,
      async run(ctx) {
        const { step } = await ctx.load();
        for (let n = step; n < 3; n++) {
          await ctx.runOnce(
            `${ctx.runId}:step:${n}`,
            async ({ idempotencyKey }) =>
              (await openai().chat.completions.create(chat(`rr step ${n}`), keyed(idempotencyKey))).choices[0]!.message
                .content,
            { step: n },
          );
          await ctx.saveProgress(n + 1, {});
        }
      },
    });
    const registry = new WorkflowRegistry([asking]);
    const store = h.store as Store & RunStore;
    const worker = new Worker({ store, registry, pollMs: 10, heartbeatMs: 50, clock: h.clock });
    const running = worker.run();
    const until = (attempts: number) => untilRun(h, 'rr', 'completed', attempts);
    try {
      await store.createRun({ id: 'rr', workflow: 'asking', inputJson: '{}', totalSteps: 3 });
      await until(1);
      expect(upstream.calls.map((c) => c.prompt)).toEqual(['rr step 0', 'rr step 1', 'rr step 2']);
      const deps = { store: async () => store, claimTtlMs: 30_000, maxBytes: 100_000, workflows: async () => registry };
      await rewind.rerun(
        deps,
        { actor: 'olga (operator)', role: 'operator', channel: 'api' },
        { runId: 'rr', fromStep: 1 },
      );
      await until(2);
    } finally {
      worker.stop();
      await h.settle(running);
    }
    expect(upstream.calls.map((c) => c.prompt)).toEqual([
      'rr step 0',
      'rr step 1',
      'rr step 2',
      'rr step 1',
      'rr step 2',
    ]);
    const calls = await h.store.listModelCalls({ runId: 'rr' });
    expect(calls.map((c) => [c.step, c.sentKey, c.idemKey !== null, c.retiredAt !== null])).toEqual([
      [0, 'rr:step:0', true, false],
      [1, 'rr:step:1', false, true],
      [2, 'rr:step:2', false, true],
      [1, 'rr:step:1', true, false],
      [2, 'rr:step:2', true, false],
    ]);
    expect((await runUsage(h.store, 'rr')).calls).toBe(5);
  });
});
