/**
 * Every API error has one shape, `{ error: { code, message, fields? } }`, and a status chosen from the
 * error's `code` — never from its message. Our own errors (WaybillError) say what went wrong; anything else
 * is a bug or an outage whose text may hold SQL or paths, so the client gets "internal error" and the server
 * log gets the rest, as one JSON line (lib/data/log.ts). A store that cannot be reached is a 503 with
 * Retry-After however it surfaced: our StoreUnavailableError, or the driver's own connection error.
 */
import { errorFields, serverLog } from '../data/log';
import { isUnreachable } from '../data/store-guard';
import { STATUS_BY_CODE } from '../error-status';
import { ApiError, ControlInputError, WaybillError } from '../errors';
import { tracingEnabled } from '../tracing';
import { requestSpan } from './trace';

export { STATUS_BY_CODE } from '../error-status';

/** Seconds a client waits before retrying a 503: a busy SQLite writer or a reconnecting pool clears quickly. */
export const RETRY_AFTER_S = 1;

export type FieldErrors = Record<string, string[]>;

export function errorBody(code: string, message: string, more: Record<string, unknown> = {}) {
  return { error: { code, message, ...more } };
}

const NO_STORE = { 'cache-control': 'no-store' };

/** A JSON response that no cache keeps: every answer describes live state. */
export function json(body: unknown, status = 200, headers: Record<string, string> = {}): Response {
  return Response.json(body, { status, headers: { ...NO_STORE, ...headers } });
}

/** The response for a thrown error; logs what the client is not shown. */
export function errorResponse(error: unknown, log: (message: string, error: unknown) => void = defaultLog): Response {
  if (isUnreachable(error)) {
    log('api: store unavailable', error);
    return json(errorBody('STORE_UNAVAILABLE', 'the store is busy or unreachable; retry shortly'), 503, {
      'retry-after': String(RETRY_AFTER_S),
    });
  }
  if (error instanceof WaybillError && STATUS_BY_CODE[error.code] !== undefined) {
    const status = STATUS_BY_CODE[error.code]!;
    const more: Record<string, unknown> = {};
    if (error instanceof ApiError) Object.assign(more, error.extra, error.fields ? { fields: error.fields } : {});
    else if (error instanceof ControlInputError) more.fields = error.fields;
    return json(errorBody(error.code, error.message, more), status);
  }
  log('api: internal error', error);
  return json(errorBody('INTERNAL', 'internal error: the request did not complete (see the server log)'), 500);
}

function defaultLog(message: string, error: unknown): void {
  serverLog().error(message, { code: (error as { code?: unknown } | null)?.code ?? null, ...errorFields(error) });
}

/**
 * Runs a handler body, turning anything it throws into the error response; in a server span when tracing is
 * on (lib/api/trace.ts), a child of the request's traceparent.
 */
export async function handle(request: Request, fn: () => Promise<Response>): Promise<Response> {
  const answer = async () => {
    try {
      return await fn();
    } catch (error) {
      return errorResponse(error);
    }
  };
  return tracingEnabled() ? requestSpan(request, answer) : answer();
}

/** The authorization refusal lib/auth returns, in the API's shape. */
export function refused(refusal: { status: 401 | 403; message: string }): Response {
  return json(
    errorBody(refusal.status === 401 ? 'UNAUTHENTICATED' : 'FORBIDDEN', refusal.message),
    refusal.status,
    refusal.status === 401 ? { 'www-authenticate': 'Bearer realm="waybill"' } : {},
  );
}
