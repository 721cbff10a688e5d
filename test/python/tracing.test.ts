/**
 * A command workflow's program and the Python client join the run's trace: `waybill worker` hands the program
 * its run span as TRACEPARENT, waybill_client sends it as a traceparent header, and the checkpoint routes record
 * each of the program's steps as a span under it. Everything goes to one real OTLP/HTTP receiver: the worker's
 * spans (service waybill-worker) and the API's (waybill-api, the route handlers on a real port in this process).
 */
import { dirname } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BIN } from '../cli/support';
import { spawnCommand } from '../support/child';
import { type Answer, request } from '../support/http';
import { startOtlpReceiver } from '../support/otlp-receiver';
import { makeTempDir } from '../support/tmp';
import { until } from '../support/until';
import { pythonMissing, sharedVenv } from './venv';

const OPERATOR = 'tracing-operator-token-0123456789';
const dir = makeTempDir('waybill-py-trace-');
const DB = dir.file('w.db');
const receiver = await startOtlpReceiver({ closeWithTest: false });
process.env.DATABASE_URL = `file:${DB}`;
process.env.WAYBILL_OPERATOR_TOKEN = OPERATOR;
process.env.WAYBILL_SESSION_SECRET = 'tracing-suite-session-secret-0123';
process.env.WAYBILL_LEASE_MS = '2000';
// The route handlers in this process trace as the API does in a dashboard configured so.
process.env.OTEL_EXPORTER_OTLP_ENDPOINT = receiver.url;
process.env.OTEL_SERVICE_NAME = 'waybill-api';

const missing = pythonMissing();
if (missing && process.env.CI === 'true')
  throw new Error(`test/python needs python3 with venv under CI=true: ${missing}`);

const { startRouteServer } = await import('../support/route-server');
const { flushTraces } = await import('../../lib/tracing');
const cache = globalThis as { waybillStore?: Promise<{ close(): Promise<void> }> };
let server: Awaited<ReturnType<typeof startRouteServer>>;
let venvBin = '';

beforeAll(async () => {
  server = await startRouteServer();
  await (await import('../../lib/data/store')).getStore();
  if (!missing) venvBin = dirname(await sharedVenv());
}, 400_000);
afterAll(async () => {
  await server?.close();
  await (await cache.waybillStore?.catch(() => undefined))?.close();
  await receiver.close();
  dir.remove();
});

const api = (method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<Answer> =>
  request(server.url, method, path, OPERATOR, body, headers);

const TRACE_ID = '0af7651916cd43dd8448eb211c80319c';
const PARENT = `00-${TRACE_ID}-b7ad6b7169203331-01`;

describe.skipIf(missing !== null)('tracing a command workflow', () => {
  it("python-agent: the program's steps, sent by the Python client, are spans of the run's trace", async () => {
    const worker = spawnCommand(process.execPath, [BIN, 'worker', '--id', 'w-py-trace'], {
      env: {
        DATABASE_URL: `file:${DB}`,
        PATH: `${venvBin}:${process.env.PATH}`,
        WAYBILL_URL: server.url,
        WAYBILL_HEARTBEAT_MS: '200',
        WAYBILL_LEASE_MS: '2000',
        OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
        OTEL_SERVICE_NAME: 'waybill-worker',
        ...(process.getuid?.() === 0 ? { WAYBILL_PROGRAM_USER: 'root' } : {}),
      },
    });
    // python-agent is one of the worker's built-ins: the control plane knows it once the worker has published it.
    const store = await (await import('../../lib/data/store')).getStore();
    await until('w-py-trace serving python-agent', async () =>
      (await store.listPublishedWorkflows({ liveWithinMs: 60_000 })).some(
        (w) => w.name === 'python-agent' && w.servedBy.includes('w-py-trace'),
      ),
    );
    // The start's trace context comes as a header: the body has none.
    const started = await api(
      'POST',
      '/api/v1/runs',
      { workflow: 'python-agent', id: 'pa-trace', input: { steps: 5, modelMs: 1 } },
      { traceparent: PARENT },
    );
    expect(started.status, JSON.stringify(started.body)).toBe(201);
    await until('pa-trace completed', async () => {
      const answer = await api('GET', '/api/v1/runs/pa-trace');
      return answer.body?.run?.status === 'completed';
    });
    worker.kill('SIGTERM');
    await worker.exited;
    await flushTraces();

    // The test's own polls of the run (GET, no traceparent) are root spans of traces of their own; the rest is one.
    const polls = receiver.spans.filter((s) => s.name === 'GET' && s.parentSpanId === '');
    expect(polls.length).toBeGreaterThan(0);
    expect(polls.every((s) => s.attributes['url.path'] === '/api/v1/runs/pa-trace')).toBe(true);
    const spans = receiver.spans.filter((s) => !polls.includes(s));
    expect(new Set(spans.map((s) => s.traceId))).toEqual(new Set([TRACE_ID]));
    const runs = spans.filter((s) => s.name === 'run' && s.service === 'waybill-worker');
    expect(runs).toHaveLength(1);
    expect(runs[0]!.parentSpanId).toBe('b7ad6b7169203331');
    // The program's five steps, each committed once through the API, under the worker's run span.
    const steps = spans.filter((s) => s.name === 'step' && s.service === 'waybill-api');
    expect(steps.map((s) => `${s.attributes['waybill.key']} ${s.attributes['waybill.outcome']}`).sort()).toEqual(
      Array.from({ length: 5 }, (_, n) => `pa-trace:step:${n} executed`),
    );
    expect(steps.every((s) => s.parentSpanId === runs[0]!.spanId)).toBe(true);
    // Every API request is a server span: the start (under the start's context), the program's five commits
    // (under the run span its client was handed), each with its status code.
    const requests = spans.filter((s) => s.service === 'waybill-api' && s.attributes['http.request.method']);
    const start = requests.filter((s) => s.attributes['url.path'] === '/api/v1/runs' && s.name === 'POST');
    expect(start.map((s) => [s.parentSpanId, s.attributes['http.response.status_code']])).toEqual([
      ['b7ad6b7169203331', 201],
    ]);
    const commits = requests.filter((s) => s.attributes['url.path'] === '/api/v1/checkpoint/commit');
    expect(commits.map((s) => [s.parentSpanId, s.attributes['http.response.status_code']])).toEqual(
      Array.from({ length: 5 }, () => [runs[0]!.spanId, 200]),
    );
    // The operator's start, audited once, is an `operator` span in the run's trace.
    const operator = spans.filter((s) => s.name === 'operator');
    expect(
      operator.map((s) => [s.attributes['waybill.action'], s.attributes['waybill.channel'], s.parentSpanId]),
    ).toEqual([['start', 'api', 'b7ad6b7169203331']]);
  });
});
