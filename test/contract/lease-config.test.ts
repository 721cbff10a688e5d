/**
 * On SQLite a commit, and the renewal due a third of a lease after the last, may each wait for the write lock.
 * A lease shorter than a third of itself plus that wait lets a commit that only waited for the lock be taken
 * over, and its side effect run again. So the store derives its wait from the lease (at most two thirds of it),
 * the configuration refuses leases too short to leave any wait, and the HTTP protocol refuses client leases
 * shorter than 1.5 × the dashboard's wait.
 */
import { existsSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { claim } from '../../lib/api/protocol';
import { parseConfig } from '../../lib/config';
import { openStore } from '../../lib/store/index';
import {
  busyTimeoutFor,
  SQLITE_BUSY_TIMEOUT_MS,
  SQLITE_MIN_LEASE_MS,
  shortestLeaseFor,
} from '../../lib/store/shared/sqlite-timeouts';
import { openSqliteStore } from '../../lib/store/sqlite';
import { runCli } from '../cli/support';
import { tempDir } from '../support/tmp';

describe('SQLite’s wait for the write lock, kept inside the step lease', () => {
  it('is two thirds of the lease, at most 5 s', () => {
    expect([SQLITE_BUSY_TIMEOUT_MS, SQLITE_MIN_LEASE_MS]).toEqual([5000, 300]);
    expect([
      busyTimeoutFor(undefined),
      busyTimeoutFor(30_000),
      busyTimeoutFor(7500),
      busyTimeoutFor(600),
      busyTimeoutFor(300),
    ]).toEqual([5000, 5000, 5000, 400, 200]);
    for (const lease of [300, 301, 500, 1000, 4999, 7499, 7500, 30_000])
      expect(lease).toBeGreaterThanOrEqual(1.5 * busyTimeoutFor(lease));
    expect([shortestLeaseFor(30_000), shortestLeaseFor(1000), shortestLeaseFor(300)]).toEqual([7500, 999, 300]);
  });

  it('a store opened for a lease waits no longer than two thirds of it; without one, 5 s', async () => {
    const dir = tempDir('waybill-busy-');
    const short = await openStore(`file:${dir.file('a.db')}`, { leaseMs: 600 });
    const plain = openSqliteStore({ path: dir.file('b.db') });
    try {
      const busy = (s: unknown) =>
        (s as { db: { pragma(p: string, o: { simple: true }): unknown } }).db.pragma('busy_timeout', { simple: true });
      expect([busy(short), busy(plain)]).toEqual([400, 5000]);
    } finally {
      await short.close();
      await plain.close();
    }
  });

  it('the configuration refuses a SQLite lease below 300 ms, naming it; PostgreSQL has no such wait', () => {
    expect(() => parseConfig({ DATABASE_URL: 'file:./x.db', WAYBILL_LEASE_MS: '299' })).toThrow(
      /WAYBILL_LEASE_MS: is below 300 ms, the shortest step lease on SQLite/,
    );
    expect(() => parseConfig({ WAYBILL_LEASE_MS: '200' })).toThrow(/WAYBILL_LEASE_MS/); // the default URL is SQLite
    expect(parseConfig({ WAYBILL_LEASE_MS: '300' }).WAYBILL_LEASE_MS).toBe(300);
    expect(parseConfig({}).WAYBILL_LEASE_MS).toBe(30_000);
    expect(parseConfig({ DATABASE_URL: 'postgres://h/db', WAYBILL_LEASE_MS: '100' }).WAYBILL_LEASE_MS).toBe(100);
  });

  it('`waybill runs` with such a lease exits 2 before opening the store', async () => {
    const dir = tempDir('waybill-lease-');
    const result = await runCli(['runs'], {
      env: { DATABASE_URL: `file:${dir.file('w.db')}`, WAYBILL_LEASE_MS: '150' },
    });
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/WAYBILL_LEASE_MS: is below 300 ms/);
    expect(existsSync(dir.file('w.db'))).toBe(false);
  });

  it('a client of the HTTP protocol asking for a lease shorter than 1.5 × the wait is refused and nothing is claimed', async () => {
    const dir = tempDir('waybill-lease-http-');
    const store = openSqliteStore({ path: dir.file('s.db') });
    const options = { leaseMs: 30_000, claimTtlMs: 30_000 };
    try {
      await expect(claim(store, { runId: 'r', key: 'r:step:0', leaseMs: 7499 }, options)).rejects.toMatchObject({
        code: 'INVALID_INPUT',
        message: expect.stringMatching(/leaseMs: must be at least 7500 ms on this SQLite store/),
      });
      expect(await store.getClaim('r:step:0', { claimTtlMs: 30_000 })).toBeNull();
      expect(await claim(store, { runId: 'r', key: 'r:step:0', leaseMs: 7500 }, options)).toMatchObject({
        outcome: 'claimed',
      });
      expect(await claim(store, { runId: 'r', key: 'r:step:1' }, options)).toMatchObject({ outcome: 'claimed' });
    } finally {
      await store.close();
    }
  });
});
