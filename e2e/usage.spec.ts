/**
 * Issue 26, the usage ledger in the browser: a run whose steps called a model through the gateway shows a
 * Model usage card (calls, tokens, cached, cost, unpriced, by step and by model) that grows by itself when a
 * call completes; a run that made none shows no card; a step's page lists that step's calls, a pending one
 * marked in flight. Calls are recorded through the store, as the gateway records them.
 */

import { ManualClock } from '../lib/clock';
import type { ModelCallAnswer, ModelCallStart, Store } from '../lib/store/contract';
import { openStore } from '../lib/store/index';
import { RunPage } from './pages/run-page';
import { expect, noChromium, test, uniqueId } from './support/test';
import { databaseUrl } from './support/waybill';

test.skip(noChromium, 'no chromium');

/**
 * The calls' store time, a second apart: a step's calls are listed by when they started, and two recorded in the
 * same millisecond would be listed in their random ids' order.
 */
const clock = new ManualClock();

async function withStore<T>(fn: (store: Store) => Promise<T>): Promise<T> {
  const store = await openStore(databaseUrl(), { synchronous: 'normal', clock });
  try {
    return await fn(store);
  } finally {
    await store.close();
  }
}

const start = (runId: string, over: Partial<ModelCallStart>): ModelCallStart => ({
  idemKey: null,
  runId,
  step: null,
  api: 'openai.chat',
  model: null,
  fingerprint: 'f',
  framing: 'json',
  leaseMs: 600_000,
  ...over,
});

async function record(store: Store, call: ModelCallStart, paid: Partial<ModelCallAnswer>): Promise<void> {
  clock.advance(1000);
  const begun = await store.beginModelCall(call);
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

test('a run shows its model usage by step and by model, live; a step lists its calls', async ({ page }) => {
  const runId = uniqueId('e2e-usage');
  const quiet = uniqueId('e2e-usage-quiet');
  await withStore(async (store) => {
    // A workflow no worker serves: nothing moves the runs while the test looks.
    await store.createRun({ id: runId, workflow: 'e2e-nobody-serves', inputJson: '{}', totalSteps: 3 });
    await store.createRun({ id: quiet, workflow: 'e2e-nobody-serves', inputJson: '{}', totalSteps: 3 });
    await record(store, start(runId, { idemKey: `${runId}:step:0`, step: 0 }), {
      model: 'gpt-e2e',
      inputTokens: 1200,
      outputTokens: 300,
      cachedTokens: 200,
      costUsd: 0.5,
    });
    await record(store, start(runId, { idemKey: `${runId}:step:1`, step: 1 }), {
      model: 'mystery-model',
      inputTokens: 100,
      outputTokens: 50,
      cachedTokens: 0,
      costUsd: null,
    });
    // Step 1's second call is still asking upstream.
    clock.advance(1000);
    await store.beginModelCall(start(runId, { idemKey: `${runId}:step:1:again`, step: 1, model: 'gpt-e2e' }));
  });

  const run = new RunPage(page);
  await run.goto(runId);
  const card = page.getByTestId('model-usage');
  await expect(card).toBeVisible();
  await expect(page.getByTestId('usage-calls')).toContainText('2');
  await expect(page.getByTestId('usage-input')).toContainText('1,300');
  await expect(page.getByTestId('usage-output')).toContainText('350');
  await expect(page.getByTestId('usage-cached')).toHaveText('200');
  await expect(page.getByTestId('usage-cost')).toContainText('$0.5000');
  await expect(page.getByTestId('usage-unpriced')).toContainText('1 call is unpriced');
  await expect(page.getByTestId('usage-by-step-row')).toHaveCount(2);
  await expect(page.getByTestId('usage-by-step-row').nth(0)).toContainText('$0.5000');
  await expect(page.getByTestId('usage-by-step-row').nth(1)).toContainText('unpriced');
  await expect(page.getByTestId('usage-by-model-row')).toHaveCount(2);

  // A call that completes now shows without a reload: the page's live refresh re-reads the ledger.
  await withStore((store) =>
    record(store, start(runId, { idemKey: `${runId}:step:2`, step: 2 }), {
      model: 'gpt-e2e',
      inputTokens: 10,
      outputTokens: 5,
      cachedTokens: 0,
      costUsd: 0.25,
    }),
  );
  await expect(page.getByTestId('usage-calls')).toContainText('3', { timeout: 10_000 });
  await expect(page.getByTestId('usage-cost')).toContainText('$0.7500');
  await expect(page.getByTestId('usage-by-step-row')).toHaveCount(3);

  // The step's page, from the card's link: its two calls, the pending one in flight.
  await page.getByTestId('usage-by-step-row').nth(1).getByRole('link').click();
  await expect(page).toHaveURL(new RegExp(`/runs/${runId}/steps/1$`));
  const calls = page.getByTestId('step-model-call');
  await expect(calls).toHaveCount(2);
  await expect(calls.nth(0)).toContainText('mystery-model');
  await expect(calls.nth(0).getByTestId('step-model-call-cost')).toHaveText('unpriced');
  await expect(calls.nth(1)).toHaveAttribute('data-state', 'pending');
  await expect(calls.nth(1)).toContainText('in flight');
  await expect(page.getByTestId('step-model-calls-total')).toContainText('1 complete call');

  // A run that made no call has no card.
  await run.goto(quiet);
  await expect(page.getByTestId('run-progress-card')).toBeVisible();
  await expect(page.getByTestId('model-usage')).toHaveCount(0);
});
