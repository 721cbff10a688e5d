/**
 * GET /api/metrics's model usage, the route handler itself on a real SQLite file: the gateway's complete
 * calls, recorded through the store, summed by the database at scrape time into waybill_model_tokens_total
 * {model,kind} and waybill_model_cost_usd_total{model}, exactly; a call still pending counts nothing, and a
 * call recorded after one scrape is in the next.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../lib/engine/log';
import type { ModelCallAnswer, ModelCallStart, Store } from '../../lib/store/contract';
import { openStore } from '../../lib/store/index';
import { makeTempDir } from '../support/tmp';

const dir = makeTempDir('waybill-metrics-models-');
// The handler reads its store through lib/config, like the server: set before the first import of it.
process.env.DATABASE_URL = `file:${dir.file('w.db')}`;
(globalThis as { waybillServerLog?: unknown }).waybillServerLog = createLogger({ component: 'web' }, () => undefined);
const { GET } = await import('../../app/api/metrics/route');
const cache = globalThis as { waybillStore?: Promise<unknown> };

afterAll(async () => {
  await ((await cache.waybillStore) as Store | undefined)?.close();
  dir.remove();
});

const start = (over: Partial<ModelCallStart>): ModelCallStart => ({
  idemKey: null,
  runId: 'r1',
  step: null,
  api: 'openai.chat',
  model: null,
  fingerprint: 'f',
  framing: 'json',
  leaseMs: 60_000,
  ...over,
});

async function record(store: Store, over: Partial<ModelCallStart>, paid: Partial<ModelCallAnswer>): Promise<void> {
  const begun = await store.beginModelCall(start(over));
  if (begun.kind !== 'lead') throw new Error('expected to lead');
  await store.completeModelCall(begun.callId, begun.token, {
    status: 200,
    headersJson: '{}',
    body: '{}',
    model: null,
    inputTokens: null,
    outputTokens: null,
    cachedTokens: null,
    costUsd: null,
    ...paid,
  });
}

async function scrape(): Promise<string[]> {
  const response = await GET(new Request('http://127.0.0.1:3000/api/metrics', { headers: { host: '127.0.0.1:3000' } }));
  expect(response.status).toBe(200);
  return (await response.text())
    .split('\n')
    .filter((l) => l.startsWith('waybill_model_') || l.includes(' waybill_model_'));
}

describe('GET /api/metrics, model usage', () => {
  it("sums the store's complete model calls by model and kind, at each scrape", async () => {
    const store = await openStore(process.env.DATABASE_URL!, { synchronous: 'normal' });
    try {
      await store.createRun({ id: 'r1', workflow: 'w', inputJson: '{}', totalSteps: null });
      await record(
        store,
        { idemKey: 'r1:step:0', step: 0 },
        { model: 'gpt-a', inputTokens: 1000, outputTokens: 200, cachedTokens: 400, costUsd: 0.5 },
      );
      await record(store, {}, { model: 'gpt-a', inputTokens: 24, outputTokens: 8, costUsd: 0.25 });
      // Unpriced: its tokens count, its cost adds nothing.
      await record(store, {}, { model: 'claude-b', inputTokens: 300, outputTokens: 100, cachedTokens: 0 });
      // No run and no model named: counted all the same, under model="".
      await record(store, { runId: null }, { inputTokens: 5, outputTokens: 1, costUsd: 0.125 });
      // Still asking upstream: nothing known of it yet.
      await store.beginModelCall(start({ idemKey: 'r1:step:1', step: 1, model: 'gpt-a' }));
    } finally {
      await store.close();
    }
    expect(await scrape()).toEqual([
      '# HELP waybill_model_tokens_total Tokens of complete model calls through the gateway, by model and kind (cached: input served from the prompt cache, part of input)',
      '# TYPE waybill_model_tokens_total counter',
      'waybill_model_tokens_total{model="claude-b",kind="input"} 300',
      'waybill_model_tokens_total{model="claude-b",kind="output"} 100',
      'waybill_model_tokens_total{model="claude-b",kind="cached"} 0',
      'waybill_model_tokens_total{model="gpt-a",kind="input"} 1024',
      'waybill_model_tokens_total{model="gpt-a",kind="output"} 208',
      'waybill_model_tokens_total{model="gpt-a",kind="cached"} 400',
      'waybill_model_tokens_total{model="",kind="input"} 5',
      'waybill_model_tokens_total{model="",kind="output"} 1',
      'waybill_model_tokens_total{model="",kind="cached"} 0',
      '# HELP waybill_model_cost_usd_total USD of complete model calls through the gateway by the price table, by model; unpriced calls add nothing',
      '# TYPE waybill_model_cost_usd_total counter',
      'waybill_model_cost_usd_total{model="claude-b"} 0',
      'waybill_model_cost_usd_total{model="gpt-a"} 0.75',
      'waybill_model_cost_usd_total{model=""} 0.125',
    ]);

    // The next scrape reads the store again: a call recorded since is in it.
    const later = await openStore(process.env.DATABASE_URL!, { synchronous: 'normal' });
    try {
      await record(later, {}, { model: 'claude-b', inputTokens: 1, outputTokens: 2, cachedTokens: 1, costUsd: 0.5 });
    } finally {
      await later.close();
    }
    const lines = await scrape();
    expect(lines.filter((l) => l.includes('claude-b'))).toEqual([
      'waybill_model_tokens_total{model="claude-b",kind="input"} 301',
      'waybill_model_tokens_total{model="claude-b",kind="output"} 102',
      'waybill_model_tokens_total{model="claude-b",kind="cached"} 1',
      'waybill_model_cost_usd_total{model="claude-b"} 0.5',
    ]);
  });
});
