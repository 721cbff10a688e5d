/**
 * A real OTLP/HTTP receiver for tracing tests: a node:http server that accepts POST /v1/traces in the JSON
 * encoding (what @opentelemetry/exporter-trace-otlp-http sends) and keeps every span it is given, flattened,
 * with its resource's service.name. Closed when the test finishes (or, started outside a test, by its caller).
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { onTestFinished } from 'vitest';

export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  service: string;
  attributes: Record<string, string | number | boolean>;
  /** STATUS_CODE_ERROR is 2. */
  status: number;
}

interface OtlpValue {
  stringValue?: string;
  intValue?: string | number;
  boolValue?: boolean;
  doubleValue?: number;
}
type OtlpAttribute = { key: string; value: OtlpValue };

function attributes(list: OtlpAttribute[] | undefined): ReceivedSpan['attributes'] {
  const out: ReceivedSpan['attributes'] = {};
  for (const { key, value } of list ?? []) {
    out[key] = value.stringValue ?? value.boolValue ?? value.doubleValue ?? Number(value.intValue);
  }
  return out;
}

export interface OtlpReceiver {
  /** The base URL, as OTEL_EXPORTER_OTLP_ENDPOINT takes it. */
  url: string;
  spans: ReceivedSpan[];
  /** How many export requests came, and how many were not JSON traces (answered 415/404). */
  requests: { ok: number; refused: number };
  close(): Promise<void>;
}

export async function startOtlpReceiver({ closeWithTest = true } = {}): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  const requests = { ok: 0, refused: 0 };
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.method !== 'POST' || req.url !== '/v1/traces' || !req.headers['content-type']?.includes('json')) {
        requests.refused++;
        res.writeHead(req.url === '/v1/traces' ? 415 : 404).end();
        return;
      }
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
        resourceSpans?: {
          resource?: { attributes?: OtlpAttribute[] };
          scopeSpans?: {
            spans?: {
              traceId: string;
              spanId: string;
              parentSpanId?: string;
              name: string;
              attributes?: OtlpAttribute[];
              status?: { code?: number };
            }[];
          }[];
        }[];
      };
      for (const rs of body.resourceSpans ?? []) {
        const service = String(attributes(rs.resource?.attributes)['service.name'] ?? '');
        for (const ss of rs.scopeSpans ?? [])
          for (const s of ss.spans ?? [])
            spans.push({
              traceId: s.traceId,
              spanId: s.spanId,
              parentSpanId: s.parentSpanId ?? '',
              name: s.name,
              service,
              attributes: attributes(s.attributes),
              status: s.status?.code ?? 0,
            });
      }
      requests.ok++;
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  let closed = false;
  const close = async () => {
    if (closed) return;
    closed = true;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  };
  if (closeWithTest) onTestFinished(close);
  return { url: `http://127.0.0.1:${port}`, spans, requests, close };
}
