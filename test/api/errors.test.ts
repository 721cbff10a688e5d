/**
 * Errors to responses: the status comes from the code; our own errors keep their message; anything else is
 * "internal error" with nothing of its text, stack or SQL reaching the client.
 */
import { describe, expect, it } from 'vitest';
import { errorResponse, refused, STATUS_BY_CODE } from '../../lib/api/errors';
import {
  ApiError,
  BudgetReachedError,
  ConflictError,
  IdempotencyKeyReuseError,
  InvalidInputError,
  InvalidTransitionError,
  LeaseLostError,
  NotFoundError,
  StoreRefusedError,
  StoreUnavailableError,
} from '../../lib/errors';

const quiet = () => {};

async function answer(error: unknown) {
  const logged: unknown[] = [];
  const response = errorResponse(error, (_m, e) => logged.push(e));
  return { status: response.status, headers: response.headers, body: await response.json(), logged };
}

describe('errorResponse', () => {
  it('maps each WaybillError code to its status and keeps its message', async () => {
    const cases: [Error, number, string][] = [
      [new InvalidInputError('bad x'), 400, 'INVALID_INPUT'],
      [new NotFoundError('run r1'), 404, 'NOT_FOUND'],
      [new ConflictError('run r1'), 409, 'CONFLICT'],
      [new InvalidTransitionError('r1', 'retry', 'running'), 409, 'INVALID_TRANSITION'],
      [new LeaseLostError('k'), 409, 'LEASE_LOST'],
      [new IdempotencyKeyReuseError('k', 'a', 'b'), 422, 'IDEMPOTENCY_KEY_REUSE'],
      [new BudgetReachedError('r1', 3, 2.5), 402, 'BUDGET_REACHED'],
    ];
    for (const [error, status, code] of cases) {
      const got = await answer(error);
      expect([got.status, got.body]).toEqual([status, { error: { code, message: error.message } }]);
      expect(got.logged).toEqual([]);
    }
    expect(Object.keys(STATUS_BY_CODE)).toHaveLength(19);
  });

  it('answers 503 with its own message for a store this build refuses, every code of it', async () => {
    const codes = [
      'STORE_TOO_NEW',
      'STORE_LEDGER_DAMAGED',
      'STORE_FOREIGN_TABLES',
      'STORE_MISSING',
      'STORE_BEHIND',
      'SCHEMA_NOT_APPLIED',
    ] as const;
    for (const code of codes) {
      const error = new StoreRefusedError(code, `${code}: run waybill migrate; nothing was changed`);
      const got = await answer(error);
      expect([got.status, got.body], code).toEqual([503, { error: { code, message: error.message } }]);
      expect(got.logged).toEqual([]);
    }
  });

  it('answers 503 with Retry-After for a busy store, without the driver text', async () => {
    const got = await answer(new StoreUnavailableError('SQLite is busy (SQLITE_BUSY)', new Error('raw')));
    expect(got.status).toBe(503);
    expect(got.headers.get('retry-after')).toBe('1');
    expect(got.body).toEqual({
      error: { code: 'STORE_UNAVAILABLE', message: 'the store is busy or unreachable; retry shortly' },
    });
    expect(got.logged).toHaveLength(1);
  });

  it('hides anything else behind a 500 and logs it', async () => {
    const leak = Object.assign(
      new Error('SQLITE_CONSTRAINT: INSERT INTO committed(idem_key) VALUES (?) at /srv/lib/store/sqlite.ts:120'),
      { code: 'SQLITE_CONSTRAINT' },
    );
    const got = await answer(leak);
    expect(got.status).toBe(500);
    expect(got.body).toEqual({
      error: { code: 'INTERNAL', message: 'internal error: the request did not complete (see the server log)' },
    });
    expect(JSON.stringify(got.body)).not.toMatch(/SQLITE|INSERT|sqlite\.ts/);
    expect(got.logged).toEqual([leak]);
    // A WaybillError whose code the API does not know is a bug too, not a message to pass on.
    expect((await answer(Object.assign(new InvalidInputError('x'), { code: 'SOMETHING_NEW' }))).status).toBe(500);
  });

  it('carries field errors and extra facts of ApiErrors, and never caches', async () => {
    const response = errorResponse(
      new ApiError('INVALID_INPUT', 'invalid body: key: is required', { key: ['is required'] }),
      quiet,
    );
    expect(response.headers.get('cache-control')).toBe('no-store');
    expect(await response.json()).toEqual({
      error: { code: 'INVALID_INPUT', message: 'invalid body: key: is required', fields: { key: ['is required'] } },
    });
    const big = errorResponse(new ApiError('PAYLOAD_TOO_LARGE', 'too big', undefined, { limit: 1024 }), quiet);
    expect([big.status, await big.json()]).toEqual([
      413,
      { error: { code: 'PAYLOAD_TOO_LARGE', message: 'too big', limit: 1024 } },
    ]);
  });
});

describe('refused', () => {
  it('answers 401 with a Bearer challenge and 403 without', async () => {
    const unauth = refused({ status: 401, message: 'sign in required' });
    expect([unauth.status, unauth.headers.get('www-authenticate'), await unauth.json()]).toEqual([
      401,
      'Bearer realm="waybill"',
      { error: { code: 'UNAUTHENTICATED', message: 'sign in required' } },
    ]);
    const forbidden = refused({ status: 403, message: 'viewer may not' });
    expect([forbidden.status, forbidden.headers.get('www-authenticate'), (await forbidden.json()).error.code]).toEqual([
      403,
      null,
      'FORBIDDEN',
    ]);
  });
});
