/**
 * A refusal in the error shape of the caller's own API, so its SDK raises the error it raises for the provider
 * (with the message and status it would show) instead of a parse failure on a shape it does not know: the
 * budget's 402 (budget.ts) and every refusal of the handler's (handler.ts), a body that is not JSON among them.
 */
import type { ModelApi } from '../store/contract';

export interface ProviderError {
  /** The provider's error type, such as `invalid_request_error`. */
  type: string;
  /** Waybill's code (lib/errors.ts), where the OpenAI shape has a field for it. */
  code: string;
  message: string;
}

/** Anthropic's shape on its route, OpenAI's (`param` is null: no one field is at fault) on the others. */
export function providerError(api: ModelApi, status: number, error: ProviderError): Response {
  const body =
    api === 'anthropic.messages'
      ? { type: 'error', error: { type: error.type, message: error.message } }
      : { error: { message: error.message, type: error.type, param: null, code: error.code } };
  return Response.json(body, { status, headers: { 'cache-control': 'no-store' } });
}

/**
 * The provider's error type for an HTTP status, as both OpenAI and Anthropic name theirs (Anthropic's
 * `request_too_large` has no OpenAI twin, whose SDK reads its type as text only).
 */
export function errorTypeOf(status: number): string {
  switch (status) {
    case 401:
      return 'authentication_error';
    case 403:
      return 'permission_error';
    case 404:
      return 'not_found_error';
    case 413:
      return 'request_too_large';
    case 429:
      return 'rate_limit_error';
    default:
      return status >= 500 ? 'api_error' : 'invalid_request_error';
  }
}
