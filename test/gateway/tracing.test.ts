/**
 * Model calls through the gateway as GenAI spans: the gateway in this process with tracing on, a real store, the
 * openai SDK pointed at it, the stand-in upstream, and a real OTLP/HTTP receiver. A call is a `chat <model>`
 * client span with the semantic conventions' gen_ai.* attributes and the tokens the ledger recorded, in its
 * run's trace (or its request's traceparent); an answer replayed from the store is one too, marked replayed.
 */
import OpenAI from 'openai';
import { afterAll, describe, expect, it } from 'vitest';
import { startOtlpReceiver } from '../support/otlp-receiver';
import { until } from '../support/until';

const receiver = await startOtlpReceiver({ closeWithTest: false });
process.env.OTEL_EXPORTER_OTLP_ENDPOINT = receiver.url;
process.env.OTEL_SERVICE_NAME = 'waybill-gateway';

const { parseConfig } = await import('../../lib/config');
const { loadPriceTable } = await import('../../lib/gateway/prices');
const { startGatewayServer } = await import('../../lib/gateway/server');
const { runUsage } = await import('../../lib/gateway/ledger');
const { flushTraces } = await import('../../lib/tracing');
const { sqliteBackend } = await import('../support/backends');
const { startModelUpstream } = await import('../support/model-upstream');

const OPERATOR = 'operator-token-for-the-gateway-tests';
const RUN_TRACE = '00-11111111111111111111111111111111-2222222222222222-01';
const CALLER = '00-33333333333333333333333333333333-4444444444444444-01';

afterAll(() => receiver.close());

describe('GenAI spans from the gateway', () => {
  it("a call and its replay: gen_ai.* attributes, the ledger's tokens, the run's trace or the request's", async () => {
    const h = await sqliteBackend.open();
    const upstream = await startModelUpstream();
    const cfg = parseConfig({
      DATABASE_URL: 'file:unused.db',
      WAYBILL_OPERATOR_TOKEN: OPERATOR,
      WAYBILL_SESSION_SECRET: 'a-session-secret-of-the-tests',
      WAYBILL_GATEWAY_OPENAI_URL: `${upstream.url}/v1`,
      WAYBILL_GATEWAY_OPENAI_KEY: 'sk-provider-only-the-gateway-holds',
    });
    const gateway = await startGatewayServer(
      { store: h.store, settings: cfg, prices: loadPriceTable(undefined), auth: cfg, pollMs: 10 },
      '127.0.0.1',
      0,
    );
    try {
      await h.store.createRun({ id: 'g1', workflow: 'w', inputJson: '{}', totalSteps: null, traceparent: RUN_TRACE });
      const openai = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: OPERATOR, maxRetries: 0 });
      const chat = { model: 'gpt-4o-mini', messages: [{ role: 'user' as const, content: 'g1 hello' }] };
      await openai.chat.completions.create(chat, { headers: { 'Idempotency-Key': 'g1:step:0' } });
      await openai.chat.completions.create(chat, { headers: { 'Idempotency-Key': 'g1:step:0', traceparent: CALLER } });
      expect(upstream.calls).toHaveLength(1);
      // Spans are made beside the answer, not before it: wait for both, flushing what has ended.
      const named = () => receiver.spans.filter((s) => s.name === 'chat gpt-4o-mini');
      await until('both GenAI spans exported', async () => {
        await flushTraces();
        return named().length >= 2;
      });
      const ledger = await runUsage(h.store, 'g1');
      const spans = named().sort(
        (a, b) => Number(a.attributes['waybill.replayed']) - Number(b.attributes['waybill.replayed']),
      );
      expect(spans).toHaveLength(2);
      const [call, replay] = spans;
      expect(call!.traceId).toBe('11111111111111111111111111111111');
      expect(call!.parentSpanId).toBe('2222222222222222');
      expect(replay!.traceId).toBe('33333333333333333333333333333333');
      for (const span of spans)
        expect(span.attributes).toMatchObject({
          'gen_ai.operation.name': 'chat',
          'gen_ai.system': 'openai',
          'gen_ai.provider.name': 'openai',
          'gen_ai.request.model': 'gpt-4o-mini',
          'gen_ai.usage.input_tokens': ledger.inputTokens,
          'gen_ai.usage.output_tokens': ledger.outputTokens,
          'waybill.run_id': 'g1',
          'waybill.key': 'g1:step:0',
        });
      expect([call!.attributes['waybill.replayed'], replay!.attributes['waybill.replayed']]).toEqual([false, true]);
      expect(ledger.inputTokens).toBeGreaterThan(0);
    } finally {
      await gateway.close();
      await upstream.close();
      await h.close();
    }
  });
});
