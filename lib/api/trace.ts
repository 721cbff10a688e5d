/**
 * A request's W3C trace context: its `traceparent` header when well formed. A malformed one is ignored, as the
 * spec asks of a receiver (a proxy's bad header must not refuse the request): the spans it would parent start
 * a trace of their own, or none are made.
 */
import { traceparentProblem } from '../domain/traceparent';
import { tracingEnabled } from '../tracing';

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
