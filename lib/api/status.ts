/**
 * The HTTP status for each WaybillError code the API can meet: the one table the JSON API (errors.ts) and the
 * model gateway (lib/gateway/) answer by. Dependency-free, so a plain Node process can use it.
 */
import type { ErrorCode } from '../errors';

/** The status for each WaybillError code the API can meet. */
export const STATUS_BY_CODE: Partial<Record<ErrorCode, number>> = {
  INVALID_INPUT: 400,
  INVALID_JSON: 400,
  UNAUTHENTICATED: 401,
  BUDGET_REACHED: 402,
  FORBIDDEN: 403,
  NOT_FOUND: 404,
  CONFLICT: 409,
  INVALID_TRANSITION: 409,
  LEASE_LOST: 409,
  PAYLOAD_TOO_LARGE: 413,
  UNSUPPORTED_MEDIA_TYPE: 415,
  IDEMPOTENCY_KEY_REUSE: 422,
  STORE_UNAVAILABLE: 503,
};
