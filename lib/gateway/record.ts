/**
 * A model call under the store's record (lib/store/contract/model-calls.ts). The request that leads asks the upstream and
 * stores its answer — a stream chunk by chunk as it arrives — and holds back a stream's last chunk (a body's
 * whole answer) until the answer is stored: a client that has the whole answer can count on its replay. A
 * request that finds the answer is given it as it was stored, byte for byte and framed the same; one that
 * finds the key in flight waits for it. The store keeps every event the upstream sent; a stream's client,
 * live or replayed, is given those its request asked for (clientStream), the same bytes either way. A failed
 * upstream (an error status, a timeout, a cut stream) stores nothing, so the key can be tried again; the lead
 * keeps reading a stream its client left, so what was paid for is kept. A lead whose run has spent its budget
 * gives its key back and is refused (budget.ts).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { BudgetReachedError } from '../errors';
import type { ModelCallRow, ModelCallStart, Store } from '../store/contract';
import { budgetRefusal, holdToBudget } from './budget';
import { costOf, type PriceTable } from './prices';
import { type GatewayRoute, type GatewaySettings, type Json, KEPT_HEADERS } from './routes';
import { type SseFilter, sseFilter } from './sse';
import { modelSpan } from './trace';
import { callUpstream } from './upstream';
import { usageOfBody, usageOfStream } from './usage';

export interface RecordDeps {
  store: Store;
  settings: GatewaySettings;
  prices: PriceTable;
  /** Between looks at a key another request holds (ms). */
  pollMs?: number;
  fetch?: typeof fetch;
  /** Told of upstream failures and lost leases; the client is told too. */
  warn?: (message: string, fields: Record<string, unknown>) => void;
  /** Told when a request waits for another request's call under its key. */
  onWait?: (idemKey: string) => void;
}

export interface PreparedCall {
  route: GatewayRoute;
  body: Json;
  headers: Headers;
  start: Omit<ModelCallStart, 'leaseMs'>;
}

/** Header on an answer given from the store rather than the upstream. */
export const REPLAYED_HEADER = 'waybill-replayed';
/** How long a waiter reads before letting the store judge the lead's lease again. */
const REJUDGE_MS = 1000;

export async function recordedCall(deps: RecordDeps, call: PreparedCall): Promise<Response> {
  const start = { ...call.start, leaseMs: deps.settings.WAYBILL_GATEWAY_LEASE_MS };
  const began = Date.now();
  for (;;) {
    const begin = await deps.store.beginModelCall(start);
    if (begin.kind === 'answered') {
      void modelSpan(deps.store, call.headers, {
        ...spanOf(call, began),
        replayed: true,
        responseModel: begin.call.model,
        inputTokens: begin.call.inputTokens,
        outputTokens: begin.call.outputTokens,
      });
      return replay(deps.store, begin.call, clientStream(call));
    }
    if (begin.kind === 'lead') {
      const refused = await overBudget(deps, call, begin.callId, begin.token);
      return refused ?? lead(deps, call, begin.callId, begin.token);
    }
    deps.onWait?.(begin.call.idemKey!);
    await waitForAnswer(deps, begin.call);
  }
}

/** The budget's refusal of a call about to go upstream (budget.ts), its key given back; null to go on. */
async function overBudget(
  deps: RecordDeps,
  call: PreparedCall,
  callId: string,
  token: string,
): Promise<Response | null> {
  if (call.start.runId === null) return null;
  try {
    await holdToBudget(deps.store, deps.settings, call.start.runId);
    return null;
  } catch (error) {
    await deps.store.abandonModelCall(callId, token).catch(() => undefined);
    if (error instanceof BudgetReachedError) return budgetRefusal(error, call.route.api);
    throw error;
  }
}

/** Until the call is answered, gone, or it is time to judge its lease again. */
async function waitForAnswer(deps: RecordDeps, pending: ModelCallRow): Promise<void> {
  const until = Date.now() + REJUDGE_MS;
  while (Date.now() < until) {
    await sleep(deps.pollMs ?? 25);
    const now = await deps.store.getModelCall(pending.idemKey!);
    if (!now || now.state === 'complete' || now.leaseToken !== pending.leaseToken) return;
  }
}

function keptHeaders(from: Headers): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of KEPT_HEADERS) {
    const value = from.get(name);
    if (value !== null) out[name] = value;
  }
  return out;
}

/**
 * What of a stream this request's client is given (the route's clientEvents): null for the stream as the
 * upstream sent it. The store keeps the upstream's every chunk, for the ledger and for a request that asks
 * for them all; a request is filtered by its own body, and one key's requests have the same body.
 */
function clientStream(call: PreparedCall): SseFilter | null {
  const keep = call.route.clientEvents?.(call.body) ?? null;
  return keep === null ? null : sseFilter(keep);
}

async function replay(store: Store, call: ModelCallRow, filter: SseFilter | null): Promise<Response> {
  const headers = { ...(JSON.parse(call.headersJson ?? '{}') as Record<string, string>), [REPLAYED_HEADER]: 'true' };
  if (call.framing === 'json') return new Response(call.body, { status: call.status ?? 200, headers });
  const chunks = await store.readModelCallChunks(call.id);
  const encoder = new TextEncoder();
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      // The stored reads through the same filter as the live stream's: the same bytes.
      const given = filter === null ? chunks : [...chunks.map((c) => filter.push(c)), filter.end()];
      for (const chunk of given) if (chunk !== '') controller.enqueue(encoder.encode(chunk));
      controller.close();
    },
  });
  return new Response(body, { status: call.status ?? 200, headers });
}

function failure(status: number, message: string): Response {
  return Response.json(
    { error: { code: 'MODEL_ERROR', message } },
    { status, headers: { 'cache-control': 'no-store' } },
  );
}

/** What every GenAI span of this call says (lib/gateway/trace.ts). */
function spanOf(call: PreparedCall, startTime: number) {
  return {
    api: call.route.api,
    runId: call.start.runId,
    idemKey: call.start.idemKey,
    requestModel: call.start.model,
    replayed: false,
    startTime,
  };
}

async function lead(deps: RecordDeps, call: PreparedCall, callId: string, token: string): Promise<Response> {
  const { store, settings } = deps;
  const began = Date.now();
  const traced = (usage: ReturnType<typeof usageOfBody> | null, error?: string) =>
    void modelSpan(store, call.headers, {
      ...spanOf(call, began),
      responseModel: usage?.model,
      inputTokens: usage?.inputTokens,
      outputTokens: usage?.outputTokens,
      error,
    });
  const api = call.route.api;
  let held = true;
  const keeper = setInterval(
    () => {
      void store.renewModelCall(callId, token, settings.WAYBILL_GATEWAY_LEASE_MS).then(
        (ok) => {
          if (!ok && held) {
            held = false;
            deps.warn?.('gateway: the lease on a model call was taken over; its answer is not stored', {
              callId,
              runId: call.start.runId,
              key: call.start.idemKey,
            });
          }
        },
        () => undefined,
      );
    },
    Math.max(50, Math.floor(settings.WAYBILL_GATEWAY_LEASE_MS / 3)),
  );
  keeper.unref();
  const done = () => clearInterval(keeper);
  const abandon = async (why: string, fields: Record<string, unknown>) => {
    done();
    traced(null, why);
    deps.warn?.(`gateway: ${why}; nothing stored`, {
      callId,
      runId: call.start.runId,
      key: call.start.idemKey,
      ...fields,
    });
    await store.abandonModelCall(callId, token).catch(() => undefined);
  };

  let upstream: Response;
  try {
    upstream = await callUpstream(call.route, settings, call.headers, call.body, deps.fetch);
  } catch (error) {
    const timedOut = (error as Error).name === 'TimeoutError';
    await abandon('the upstream did not answer', { error: (error as Error).message });
    return failure(
      timedOut ? 504 : 502,
      timedOut
        ? `the upstream did not answer within ${settings.WAYBILL_GATEWAY_TIMEOUT_MS} ms (WAYBILL_GATEWAY_TIMEOUT_MS)`
        : `the upstream could not be reached: ${(error as Error).message}`,
    );
  }
  const headers = keptHeaders(upstream.headers);
  if (upstream.status < 200 || upstream.status > 299) {
    // An error is the upstream's, passed on as it came (an SDK retries a 429 or a 5xx by it); never an answer.
    const text = await upstream.text().catch(() => '');
    await abandon('the upstream answered with an error', { status: upstream.status });
    return new Response(text, { status: upstream.status, headers });
  }
  const answer = (usage: ReturnType<typeof usageOfBody>, body: string | null) => ({
    status: upstream.status,
    headersJson: JSON.stringify(headers),
    body,
    model: usage.model ?? call.start.model,
    inputTokens: usage.inputTokens,
    outputTokens: usage.outputTokens,
    cachedTokens: usage.cachedTokens,
    costUsd: costOf(deps.prices, usage.model ?? call.start.model, usage),
  });

  if (call.start.framing === 'json' || upstream.body === null) {
    let text: string;
    try {
      text = await upstream.text();
    } catch (error) {
      await abandon('the upstream cut its answer', { error: (error as Error).message });
      return failure(502, `the upstream cut its answer: ${(error as Error).message}`);
    }
    done();
    const usage = usageOfBody(api, text);
    traced(usage);
    if (held) await store.completeModelCall(callId, token, answer(usage, text));
    return new Response(text, { status: upstream.status, headers });
  }

  const reader = upstream.body.getReader();
  const decoder = new TextDecoder();
  const encoder = new TextEncoder();
  const filter = clientStream(call);
  const given = (text: string) => (filter === null ? text : filter.push(text));
  let attached = true;
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      const send = (text: string) => {
        if (!attached || text === '') return;
        try {
          controller.enqueue(encoder.encode(text));
        } catch {
          attached = false;
        }
      };
      void (async () => {
        const parts: string[] = [];
        let last: string | null = null;
        try {
          for (;;) {
            const { done: end, value } = await reader.read();
            const text = end ? decoder.decode() : decoder.decode(value, { stream: true });
            if (text !== '') {
              if (held) held = await store.appendModelCallChunks(callId, token, parts.length, [text]);
              parts.push(text);
              if (last !== null) send(given(last));
              last = text;
            }
            if (end) break;
          }
        } catch (error) {
          await abandon('the upstream cut its stream', { error: (error as Error).message });
          if (attached) controller.error(error);
          return;
        }
        done();
        const text = parts.join('');
        const usage = usageOfStream(api, text);
        traced(usage);
        if (held) await store.completeModelCall(callId, token, answer(usage, null));
        if (last !== null) send(given(last));
        if (filter !== null) send(filter.end());
        if (attached) controller.close();
      })();
    },
    cancel() {
      // The client went (its worker was killed): the answer is still read to its end and stored.
      attached = false;
    },
  });
  return new Response(body, { status: upstream.status, headers });
}
