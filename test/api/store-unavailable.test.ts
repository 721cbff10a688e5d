/**
 * Issue 11, item 16 (the API's half, without a server): a store that cannot be reached is a 503
 * STORE_UNAVAILABLE with Retry-After however the failure surfaced — our StoreUnavailableError, a copy of it
 * from another bundle (same code, another class), or the driver's own connection error from a store that
 * could not even be opened — and the server log gets one JSON line for it, never a dump on console.error.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { errorResponse } from '../../lib/api/errors';
import { guardStore } from '../../lib/data/store-guard';
import { markStoreUp, storeDownSince } from '../../lib/data/store-health';
import { createLogger } from '../../lib/engine/log';
import { StoreUnavailableError, WaybillError } from '../../lib/errors';

const logged: string[] = [];
(globalThis as { waybillServerLog?: unknown }).waybillServerLog = createLogger({ component: 'web' }, (line) =>
  logged.push(line),
);

afterEach(() => {
  logged.length = 0;
  markStoreUp();
});

const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });

describe('a store that cannot be reached', () => {
  it('is a 503 STORE_UNAVAILABLE with Retry-After, whatever the error, logged as one JSON line', async () => {
    const consoleError = vi.spyOn(console, 'error');
    const cases: unknown[] = [
      new StoreUnavailableError('PostgreSQL query failed 8 times (last: ECONNREFUSED)', refused),
      new WaybillError('STORE_UNAVAILABLE', "from another bundle's copy of the class"),
      refused,
      new Error('Connection terminated unexpectedly'),
      Object.assign(new Error('the database system is shutting down'), { code: '57P03' }),
    ];
    for (const error of cases) {
      const response = errorResponse(error);
      expect(response.status).toBe(503);
      expect(response.headers.get('retry-after')).toBe('1');
      expect(await response.json()).toEqual({
        error: { code: 'STORE_UNAVAILABLE', message: 'the store is busy or unreachable; retry shortly' },
      });
    }
    expect(logged).toHaveLength(cases.length);
    for (const line of logged) {
      expect(line.endsWith('\n') && !line.slice(0, -1).includes('\n')).toBe(true);
      expect(JSON.parse(line)).toMatchObject({
        level: 'error',
        component: 'web',
        msg: 'api: store unavailable',
        error: expect.any(String),
        stack: expect.any(String),
      });
    }
    expect(consoleError).not.toHaveBeenCalled();
    consoleError.mockRestore();
  });

  it('a bug is still a 500 INTERNAL, with its text only in the one log line', async () => {
    const response = errorResponse(Object.assign(new Error('syntax error at or near "SELEC"'), { code: '42601' }));
    expect(response.status).toBe(500);
    expect(JSON.stringify(await response.json())).not.toContain('SELEC');
    expect(logged).toHaveLength(1);
    expect(JSON.parse(logged[0]!)).toMatchObject({
      msg: 'api: internal error',
      code: '42601',
      error: expect.stringContaining('SELEC'),
    });
  });

  it('guardStore marks the store down on an unreachable failure, up on the next success, and passes other errors through', async () => {
    let fail: unknown = null;
    const store = guardStore({
      async read(): Promise<string> {
        if (fail) throw fail;
        return 'row';
      },
      dialect: 'postgres',
    });
    expect(store.dialect).toBe('postgres');
    fail = refused;
    const thrown = await store.read().catch((e: unknown) => e);
    expect(thrown).toBeInstanceOf(StoreUnavailableError);
    expect((thrown as { digest?: string }).digest).toBe('WAYBILL_STORE_UNAVAILABLE');
    expect(storeDownSince()).not.toBeNull();
    fail = new Error('a bug');
    await expect(store.read()).rejects.toThrow('a bug');
    expect(storeDownSince()).not.toBeNull();
    fail = null;
    expect(await store.read()).toBe('row');
    expect(storeDownSince()).toBeNull();
  });
});
