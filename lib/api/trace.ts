/**
 * A request's W3C trace context: its `traceparent` header when well formed. A malformed one is ignored, as the
 * spec asks of a receiver (a proxy's bad header must not refuse the request): the spans it would parent start
 * a trace of their own, or none are made.
 */
import { traceparentProblem } from '../domain/traceparent';
import { startSpan, tracingEnabled } from '../tracing';

export function requestTraceparent(request: Request): string | undefined {
  const header = request.headers.get('traceparent')?.trim().toLowerCase();
  return header && traceparentProblem(header) === undefined ? header : undefined;
}

/** requestTraceparent, when tracing is on: what a protocol call's spans continue (lib/api/protocol.ts). */
export function protocolTraceparent(request: Request): { traceparent?: string } {
  if (!tracingEnabled()) return {};
  const traceparent = requestTraceparent(request);
  return traceparent === undefined ? {} : { traceparent };
}

/**
 * A request's answer in a server span (the HTTP semantic conventions' attributes), a child of its traceparent:
 * one per API request, its status code on it, failed from 500 up. Only called with tracing on.
 */
export async function requestSpan(request: Request, answer: () => Promise<Response>): Promise<Response> {
  const url = new URL(request.url);
  const span = await startSpan(request.method, {
    kind: 'server',
    parent: requestTraceparent(request),
    attributes: {
      'http.request.method': request.method,
      'url.path': url.pathname,
      'url.scheme': url.protocol.slice(0, -1),
    },
  });
  const response = await answer();
  span?.set({ 'http.response.status_code': response.status });
  span?.end(response.status >= 500 ? new Error(`HTTP ${response.status}`) : undefined);
  return response;
}
