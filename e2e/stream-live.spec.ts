/**
 * Issue 26, live streams in the browser: a completion the `openai` SDK streams through the real gateway from
 * the stand-in upstream appears on its step page as it arrives, marked arriving, and grows to the whole
 * answer without a reload; the step's own stream (as ctx.stream writes it) grows beside it. The stand-in
 * pauses its stream halfway until the test lets it go, so what the page must show at each point is known.
 */
import OpenAI from 'openai';
import { parseConfig } from '../lib/config';
import { loadPriceTable } from '../lib/gateway/prices';
import { type GatewayServer, startGatewayServer } from '../lib/gateway/server';
import type { Store } from '../lib/store/contract';
import { openStore } from '../lib/store/index';
import { type ModelUpstream, startModelUpstream } from '../test/support/model-upstream';
import { RunPage } from './pages/run-page';
import { expect, noChromium, test, uniqueId } from './support/test';
import { databaseUrl } from './support/waybill';

test.skip(noChromium, 'no chromium');

const TOKEN = 'operator-token-of-the-live-stream-spec';

let store: Store;
let upstream: ModelUpstream;
let gateway: GatewayServer;

test.beforeEach(async () => {
  store = await openStore(databaseUrl(), { synchronous: 'normal' });
  upstream = await startModelUpstream();
  const settings = parseConfig({
    DATABASE_URL: databaseUrl(),
    WAYBILL_OPERATOR_TOKEN: TOKEN,
    WAYBILL_SESSION_SECRET: 'a-session-secret-of-the-live-stream-spec',
    WAYBILL_GATEWAY_OPENAI_URL: `${upstream.url}/v1`,
  });
  gateway = await startGatewayServer(
    { store, settings, prices: loadPriceTable(undefined), auth: settings, pollMs: 10 },
    '127.0.0.1',
    0,
  );
});

test.afterEach(async () => {
  upstream.release();
  await gateway.close();
  await upstream.close();
  await store.close();
});

test("a streamed completion and the step's own stream grow on the step page as they arrive", async ({ page }) => {
  const runId = uniqueId('e2e-stream');
  // A workflow no worker serves: nothing but this test writes to the run.
  await store.createRun({ id: runId, workflow: 'e2e-nobody-serves', inputJson: '{}', totalSteps: 1 });
  await store.appendStepStream({ runId, step: 0, attempt: 1, seq: 0, text: 'planning the answer' });

  // The answer is "echo:" and the prompt's eight words, a word an event; the stand-in sends the first half of
  // the stream's events (the role, "echo:" and four words) before it pauses. The gateway stores each chunk as
  // it comes and holds the latest back from the client until the next one (or the stored end), so the SDK is a
  // word behind the store.
  upstream.misbehave('pause');
  const openai = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: TOKEN, maxRetries: 0 });
  const stream = await openai.chat.completions.create(
    {
      model: 'gpt-4o-mini',
      messages: [{ role: 'user', content: 'alpha bravo charlie delta echo foxtrot golf hotel' }],
      stream: true,
    },
    { headers: { 'Idempotency-Key': `${runId}:step:0` } },
  );
  let received = '';
  const reading = (async () => {
    for await (const chunk of stream) received += chunk.choices[0]?.delta.content ?? '';
  })();
  await expect.poll(() => received).toBe('echo: alpha bravo charlie');
  const half = 'echo: alpha bravo charlie delta';

  const run = new RunPage(page);
  expect(await run.gotoStep(runId, '0')).toBe(200);
  const call = page.getByTestId('model-call-transcript');
  await expect(call).toHaveCount(1);
  await expect(call).toContainText('(arriving)');
  await expect(call.getByTestId('model-call-text')).toHaveText(half);
  await expect(page.getByTestId('step-stream-text')).toHaveText('planning the answer');

  // The rest arrives, and the step streams more of its own: the page shows both without a reload.
  await store.appendStepStream({ runId, step: 0, attempt: 1, seq: 1, text: ', then writing it' });
  upstream.release();
  await reading;
  const whole = `${half} echo foxtrot golf hotel`;
  expect(received).toBe(whole);
  await expect(call.getByTestId('model-call-text')).toHaveText(whole, { timeout: 10_000 });
  await expect(call).not.toContainText('(arriving)');
  await expect(page.getByTestId('step-stream-text')).toHaveText('planning the answer, then writing it');
  expect(upstream.calls).toHaveLength(1);
});
