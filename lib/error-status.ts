/**
 * The HTTP status for each WaybillError code the API can meet: the one table the JSON API (lib/api/errors.ts)
 * and the model gateway (lib/gateway/) answer by. A leaf beside the codes, so that neither edge imports the
 * other; dependency-free, so a plain Node process can use it.
 */
import type { ErrorCode } from './errors';

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
  // A store this build refuses to run on (StoreRefusedError): every call fails alike until an operator acts,
  // and the error's message says what to do, so the client gets it rather than "internal error".
  STORE_TOO_NEW: 503,
  STORE_LEDGER_DAMAGED: 503,
  STORE_FOREIGN_TABLES: 503,
  STORE_MISSING: 503,
  STORE_BEHIND: 503,
  SCHEMA_NOT_APPLIED: 503,
};
