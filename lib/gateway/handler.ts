/**
 * The gateway's one handler, a web Request to a Response, so `waybill gateway` (server.ts) and a route of the
 * dashboard can serve it alike. It checks, in order, before anything is written or sent upstream: the route,
 * who is asking (auth.ts), the body (bounded, sent as JSON by the control API's rule, a JSON object), and the
 * key rules — a valid Idempotency-Key, a run token's keys its own run's (keyRun, the rule lib/api/run-scope.ts
 * holds the checkpoint protocol to) and its run not finished. Then record.ts makes or replays the call.
 */

import type { Principal } from '../auth/principal';
import { contentKey, keyProblem, keyRun } from '../checkpoint/keys';
import { jsonMediaTypeProblem } from '../domain/json-media-type';
import { STATUS_BY_CODE } from '../error-status';
import { ApiError, WaybillError } from '../errors';
import type { ModelApi } from '../store/contract';
import { FINISHED_STATUSES } from '../store/shared/sql';
import { ANTHROPIC_ROUTES } from './anthropic';
import { type GatewayAuth, gatewayPrincipal } from './auth';
import { OPENAI_ROUTES } from './openai';
import { errorTypeOf, providerError } from './provider-error';
import { type RecordDeps, recordedCall } from './record';
import { type GatewayRoute, type Json, MAX_REQUEST_BYTES } from './routes';

export interface GatewayDeps extends RecordDeps {
  auth: GatewayAuth;
}

export const GATEWAY_ROUTES: GatewayRoute[] = [...OPENAI_ROUTES, ...ANTHROPIC_ROUTES];

/** The route a request is for, or undefined: read before anything else, so every refusal takes its shape. */
export const routeOf = (request: Request): GatewayRoute | undefined => {
  const path = new URL(request.url).pathname.replace(/\/+$/, '');
  return GATEWAY_ROUTES.find((r) => r.path === path);
};

export async function handleGatewayRequest(request: Request, deps: GatewayDeps): Promise<Response> {
  const route = routeOf(request);
  try {
    return await serve(request, route, deps);
  } catch (error) {
    return gatewayError(error, deps.warn, route?.api);
  }
}

/**
 * A failure as the gateway answers it, in the error shape of the route's API (OpenAI's where there is no route,
 * as no SDK sent it): a Waybill error by its code's status, anything else a 500 and a log line.
 */
export function gatewayError(error: unknown, warn: GatewayDeps['warn'], api?: ModelApi): Response {
  if (error instanceof WaybillError && STATUS_BY_CODE[error.code] !== undefined)
    return refusal(api, STATUS_BY_CODE[error.code]!, error.code, error.message);
  warn?.('gateway: internal error', { error: (error as Error).message });
  return refusal(api, 500, 'INTERNAL', 'internal error: the model call did not complete (see the gateway log)');
}

function refusal(api: ModelApi | undefined, status: number, code: string, message: string): Response {
  return providerError(api ?? 'openai.chat', status, { type: errorTypeOf(status), code, message });
}

async function serve(request: Request, route: GatewayRoute | undefined, deps: GatewayDeps): Promise<Response> {
  if (!route) {
    const path = new URL(request.url).pathname.replace(/\/+$/, '');
    return refusal(
      undefined,
      404,
      'NOT_FOUND',
      `the gateway serves ${GATEWAY_ROUTES.map((r) => `POST ${r.path}`).join(', ')}; not ${path}`,
    );
  }
  if (request.method !== 'POST') return refusal(route.api, 405, 'METHOD_NOT_ALLOWED', `${route.path} takes POST only`);
  const who = gatewayPrincipal(deps.auth, request.headers, Date.now());
  const text = await readText(request);
  // Sent as something else (a form, text/plain): refused in the SDK's own shape, so the SDK raises its own error.
  // A request with no body is not asked what it is, as lib/api/body.ts does not ask.
  const notJson = text === '' ? null : jsonMediaTypeProblem(request.headers.get('content-type'));
  if (notJson !== null) return refusal(route.api, 415, 'UNSUPPORTED_MEDIA_TYPE', `${notJson}; nothing was sent`);
  const body = parseBody(text);
  const idemKey = request.headers.get('idempotency-key');
  if (idemKey !== null) {
    const problem = keyProblem(idemKey);
    if (problem) throw new ApiError('INVALID_INPUT', `the Idempotency-Key header ${problem}; nothing was sent`);
  }
  const runId = await runOf(deps, who, idemKey);
  const step = idemKey === null ? null : Number(/:step:(\d+)$/.exec(idemKey)?.[1] ?? Number.NaN);
  return recordedCall(deps, {
    route,
    body,
    headers: request.headers,
    start: {
      idemKey,
      runId,
      step: Number.isSafeInteger(step) ? step : null,
      api: route.api,
      model: typeof body.model === 'string' ? body.model : null,
      // The route is part of what was asked: one key may not be a chat completion and then an embedding.
      fingerprint: contentKey({ path: route.path, body }),
      framing: body.stream === true ? 'sse' : 'json',
    },
  });
}

async function readText(request: Request): Promise<string> {
  const declared = Number(request.headers.get('content-length') ?? 0);
  if (declared > MAX_REQUEST_BYTES)
    throw new ApiError('PAYLOAD_TOO_LARGE', `a model request is at most ${MAX_REQUEST_BYTES} bytes`);
  const text = await request.text();
  if (Buffer.byteLength(text) > MAX_REQUEST_BYTES)
    throw new ApiError('PAYLOAD_TOO_LARGE', `a model request is at most ${MAX_REQUEST_BYTES} bytes`);
  return text;
}

function parseBody(text: string): Json {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw new ApiError('INVALID_JSON', 'the request body is not JSON; nothing was sent');
  }
  if (body === null || typeof body !== 'object' || Array.isArray(body))
    throw new ApiError('INVALID_INPUT', 'the request body must be a JSON object; nothing was sent');
  return body as Json;
}

/** The run the call is recorded under; a run token's key must be its run's and its run not finished. */
async function runOf(deps: GatewayDeps, who: Principal, idemKey: string | null): Promise<string | null> {
  if (who.role !== 'run') return idemKey === null ? null : keyRun(idemKey);
  const own = who.runId!;
  if (idemKey !== null && keyRun(idemKey) !== own) {
    const other = keyRun(idemKey);
    throw new ApiError(
      'FORBIDDEN',
      `a run token for run ${own} may use only its run's keys ("${own}:step:<n>", or "${own}:<name>"), not ${idemKey.slice(0, 200)}${other === null ? '' : `: that key is run ${other.slice(0, 200)}'s`}`,
    );
  }
  const status = (await deps.store.getRun(own))?.status;
  if (status !== undefined && (FINISHED_STATUSES as readonly string[]).includes(status))
    throw new ApiError('FORBIDDEN', `run ${own} is ${status}: its run tokens are refused`);
  return own;
}
