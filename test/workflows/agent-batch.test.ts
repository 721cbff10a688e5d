import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it, onTestFinished } from 'vitest';
import { stepKey } from '../../lib/checkpoint/keys';
import {
  builtinRegistry,
  httpModel,
  type ModelOutput,
  modelFromEnv,
  simulateCompletion,
  simulatedModel,
  syntheticItem,
} from '../../lib/engine/workflows';
import type { Store } from '../../lib/store/contract';
import { openTestStore, runToEnd } from './harness';

/** listCommitted orders by key, where step 10 sorts before step 2. */
const stepOrder = (store: Store) => async (runId: string) =>
  (await store.listCommitted(runId)).sort((a, b) => (a.step ?? 0) - (b.step ?? 0));

const items = Array.from(
  { length: 20 },
  (_, n) => `Item ${n}: the quarterly report for region ${n % 4} is late again.`,
);

describe('simulated model', () => {
  it('answers from the prompt alone', async () => {
    const call = { idempotencyKey: 'k', signal: new AbortController().signal };
    const a = await simulatedModel().complete('hello there world', call);
    expect(a).toEqual(simulateCompletion('hello there world'));
    expect(a.text).toMatch(/^summary of 3 word\(s\): hello there world \[[0-9a-f]{8}\]$/);
    expect(a.completionTokens).toBeGreaterThanOrEqual(16);
    expect(simulateCompletion('hello there world!')).not.toEqual(a);
  });

  it('fails transiently at its failure rate and honours the abort signal', async () => {
    const call = { idempotencyKey: 'k', signal: new AbortController().signal };
    await expect(simulatedModel({ failureRate: 1 }).complete('x', call)).rejects.toMatchObject({
      code: 'MODEL_ERROR',
      transient: true,
    });
    const controller = new AbortController();
    const pending = simulatedModel({ latencyMs: 10_000 }).complete('x', {
      idempotencyKey: 'k',
      signal: controller.signal,
    });
    controller.abort();
    await expect(pending).rejects.toMatchObject({ name: 'AbortError' });
  });
});

describe('agent-batch through a worker', () => {
  it('commits one simulated answer per item, in the progress transaction', async () => {
    const { store } = openTestStore();
    const committedInStepOrder = stepOrder(store);
    const run = await runToEnd(store, builtinRegistry(), {
      workflow: 'agent-batch',
      id: 'batch-1',
      input: { items, latencyMs: 1 },
    });
    expect(run).toMatchObject({ status: 'completed', totalSteps: 20, error: null });
    expect(JSON.parse(run.outputJson!)).toMatchObject({ processed: 20, executed: 20, skipped: 0, model: 'simulated' });
    const committed = await committedInStepOrder('batch-1');
    expect(committed).toHaveLength(20);
    for (const [n, row] of committed.entries()) {
      expect(row).toMatchObject({ idemKey: stepKey('batch-1', n), step: n, source: 'executed' });
      expect(JSON.parse(row.resultJson)).toEqual(simulateCompletion(items[n]!));
    }
    expect(await store.loadProgress('batch-1')).toMatchObject({ step: 20, executed: 20, skipped: 0 });
  });

  it('makes up prompts from a count', async () => {
    const { store } = openTestStore();
    const committedInStepOrder = stepOrder(store);
    const run = await runToEnd(store, builtinRegistry(), {
      workflow: 'agent-batch',
      id: 'count-1',
      input: { count: 30, latencyMs: 0 },
    });
    expect(run.status).toBe('completed');
    const results = (await committedInStepOrder('count-1')).map((r) => JSON.parse(r.resultJson) as ModelOutput);
    expect(results).toEqual(Array.from({ length: 30 }, (_, n) => simulateCompletion(syntheticItem(n, 30))));
  });

  it('completes despite transient failures, each one recorded as a failed event', async () => {
    const { store } = openTestStore();
    const input = { count: 50, latencyMs: 0, failureRate: 0.3 };
    const run = await runToEnd(store, builtinRegistry({ maxAttempts: 40 }), {
      workflow: 'agent-batch',
      id: 'flaky-1',
      input,
    });
    expect(run.status).toBe('completed');
    expect(await store.listCommitted('flaky-1')).toHaveLength(50);
    const failed = (await store.listEvents('flaky-1', { limit: 10_000 })).filter((e) => e.outcome === 'failed');
    // 50 steps at 0.3: about 21 failures expected; none at all has odds below one in a million.
    expect(failed.length).toBeGreaterThan(0);
    for (const event of failed) expect(event.detail).toMatch(/simulated transient model failure \(failureRate 0\.3\)/);
    expect(await store.loadProgress('flaky-1')).toMatchObject({ step: 50, executed: 50 });
  });

  it('fails the run when a step keeps failing past maxAttempts', async () => {
    const { store } = openTestStore();
    const run = await runToEnd(store, builtinRegistry({ maxAttempts: 2 }), {
      workflow: 'agent-batch',
      id: 'doomed-1',
      input: { count: 3, latencyMs: 0, failureRate: 1 },
    });
    expect(run.status).toBe('failed');
    expect(run.error).toMatch(/doomed-1:step:0 failed after 2 attempt\(s\): simulated transient model failure/);
  });
});

interface Seen {
  key: string | undefined;
  headers: IncomingHttpHeaders;
  body: { model: string; messages: { role: string; content: string }[] };
}

/** An OpenAI-compatible chat-completions server on loopback; `fail` decides a status for a request (0: hang). */
async function chatServer(fail: (seen: Seen, index: number) => number = () => 200) {
  const seen: Seen[] = [];
  const server = createServer((req, res) => {
    let raw = '';
    req
      .setEncoding('utf8')
      .on('data', (c: string) => (raw += c))
      .on('end', () => {
        const entry: Seen = {
          key: req.headers['idempotency-key'] as string | undefined,
          headers: req.headers,
          body: JSON.parse(raw),
        };
        seen.push(entry);
        const status = fail(entry, seen.length - 1);
        if (status === 0) return; // hang: never answer
        res.writeHead(status, { 'content-type': 'application/json' });
        if (status !== 200) return res.end(JSON.stringify({ error: { message: `status ${status} on purpose` } }));
        res.end(
          JSON.stringify({
            id: `chatcmpl-${seen.length}`,
            object: 'chat.completion',
            model: entry.body.model,
            choices: [
              {
                index: 0,
                message: {
                  role: 'assistant',
                  content: `answer to <${entry.body.messages[0]!.content}> for ${entry.key}`,
                },
                finish_reason: 'stop',
              },
            ],
            usage: { prompt_tokens: 11, completion_tokens: 7, total_tokens: 18 },
          }),
        );
      });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  onTestFinished(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  );
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/chat/completions`;
  return { url, seen };
}

describe('agent-batch against an OpenAI-compatible endpoint (WAYBILL_MODEL_URL)', () => {
  it('sends each step once, with its idempotency key, and commits the answer', async () => {
    const { store } = openTestStore();
    const committedInStepOrder = stepOrder(store);
    const { url, seen } = await chatServer();
    const model = modelFromEnv({
      WAYBILL_MODEL_URL: url,
      WAYBILL_MODEL_NAME: 'test-model',
      WAYBILL_MODEL_API_KEY: 'sk-test',
    });
    const run = await runToEnd(store, builtinRegistry({ model }), {
      workflow: 'agent-batch',
      id: 'http-1',
      input: { items },
    });
    expect(run.status).toBe('completed');
    expect(JSON.parse(run.outputJson!)).toMatchObject({ executed: 20, model: 'test-model' });

    expect(seen).toHaveLength(20);
    expect(new Set(seen.map((s) => s.key)).size).toBe(20);
    for (const [n, s] of seen.entries()) {
      expect(s.key).toBe(stepKey('http-1', n));
      expect(s.headers.authorization).toBe('Bearer sk-test');
      expect(s.body).toEqual({ model: 'test-model', messages: [{ role: 'user', content: items[n] }] });
    }
    const committed = await committedInStepOrder('http-1');
    expect(committed.map((row) => JSON.parse(row.resultJson))).toEqual(
      items.map((item, n) => ({
        model: 'test-model',
        text: `answer to <${item}> for ${stepKey('http-1', n)}`,
        promptTokens: 11,
        completionTokens: 7,
      })),
    );
  });

  it('retries 5xx and 429 with the same key, and names the status', async () => {
    const { store } = openTestStore();
    const { url, seen } = await chatServer((_, i) => (i === 2 ? 503 : i === 5 ? 429 : 200));
    const model = modelFromEnv({ WAYBILL_MODEL_URL: url, WAYBILL_MODEL_NAME: 'm' });
    const run = await runToEnd(store, builtinRegistry({ model }), {
      workflow: 'agent-batch',
      id: 'http-2',
      input: { count: 5 },
    });
    expect(run.status).toBe('completed');
    expect(seen).toHaveLength(7);
    expect(seen[2]!.key).toBe(seen[3]!.key);
    expect(seen[5]!.key).toBe(seen[6]!.key);
    expect(seen[0]!.headers.authorization).toBeUndefined();
    const failed = (await store.listEvents('http-2')).filter((e) => e.outcome === 'failed').map((e) => e.detail);
    expect(failed).toEqual([
      expect.stringMatching(/answered 503 Service Unavailable: .*on purpose/),
      expect.stringMatching(/answered 429 Too Many Requests/),
    ]);
  });

  it('fails the run on a 4xx with a message that says what to check', async () => {
    const { store } = openTestStore();
    const { url } = await chatServer(() => 401);
    const model = modelFromEnv({ WAYBILL_MODEL_URL: url, WAYBILL_MODEL_NAME: 'm', WAYBILL_MODEL_API_KEY: 'wrong' });
    const run = await runToEnd(store, builtinRegistry({ model, maxAttempts: 2 }), {
      workflow: 'agent-batch',
      id: 'http-3',
      input: { count: 2 },
    });
    expect(run.status).toBe('failed');
    expect(run.error).toMatch(
      /answered 401 Unauthorized \(not transient: check WAYBILL_MODEL_NAME and WAYBILL_MODEL_API_KEY\)/,
    );
    expect(run.error).not.toMatch(/wrong/);
  });

  it('needs a model name with a URL, and a refused connection is a clear transient error', async () => {
    expect(modelFromEnv({})).toBeUndefined();
    // A port that was just free: nothing listens there.
    const { url } = await chatServer();
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    const dead = `http://127.0.0.1:${port}/v1/chat/completions`;
    expect(() => modelFromEnv({ WAYBILL_MODEL_URL: url })).toThrow(/WAYBILL_MODEL_NAME must be set/);
    const model = modelFromEnv({ WAYBILL_MODEL_URL: dead, WAYBILL_MODEL_NAME: 'm' })!;
    const error = await model
      .complete('x', { idempotencyKey: 'k', signal: new AbortController().signal })
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'MODEL_ERROR', transient: true });
    expect((error as Error).message).toBe(`model request to ${dead} failed: connect ECONNREFUSED 127.0.0.1:${port}`);
  });

  it("times out a silent endpoint (transient), and passes an abort up as the step's own reason", async () => {
    const { url, seen } = await chatServer(() => 0);
    const model = httpModel({ url, model: 'm', timeoutMs: 150 });
    const timedOut = await model
      .complete('x', { idempotencyKey: 'k1', signal: new AbortController().signal })
      .catch((e: unknown) => e);
    expect(timedOut).toMatchObject({
      code: 'MODEL_ERROR',
      transient: true,
      message: `model request to ${url} timed out after 150 ms`,
    });
    const controller = new AbortController();
    const pending = httpModel({ url, model: 'm' }).complete('y', { idempotencyKey: 'k2', signal: controller.signal });
    while (seen.length < 2) await new Promise((resolve) => setTimeout(resolve, 5));
    const reason = new Error('the run was paused');
    controller.abort(reason);
    await expect(pending).rejects.toBe(reason);
  });
});
