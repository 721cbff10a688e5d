/**
 * A step lease shorter than SQLite's wait for the write lock lets a commit that only waited for the lock be
 * taken over, and its side effect run again: the configuration refuses it, naming both values.
 */
import { existsSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../lib/config';
import { SQLITE_BUSY_TIMEOUT_MS } from '../../lib/store/sqlite-timeouts';
import { runCli } from '../cli/support';
import { tempDir } from '../support/tmp';

describe('WAYBILL_LEASE_MS against SQLite’s busy timeout', () => {
  it('refuses a lease below 1.5 × the busy timeout on SQLite, naming both; PostgreSQL has no such wait', () => {
    expect(SQLITE_BUSY_TIMEOUT_MS).toBe(5000);
    const low = () => parseConfig({ DATABASE_URL: 'file:./x.db', WAYBILL_LEASE_MS: '3000' });
    expect(low).toThrow(/WAYBILL_LEASE_MS: is 3000 ms, below SQLite's busy timeout of 5000 ms × 1\.5 = 7500 ms/);
    // The default URL is SQLite too.
    expect(() => parseConfig({ WAYBILL_LEASE_MS: '7499' })).toThrow(/WAYBILL_LEASE_MS/);
    expect(parseConfig({ WAYBILL_LEASE_MS: '7500' }).WAYBILL_LEASE_MS).toBe(7500);
    expect(parseConfig({}).WAYBILL_LEASE_MS).toBe(30_000);
    expect(parseConfig({ DATABASE_URL: 'postgres://h/db', WAYBILL_LEASE_MS: '3000' }).WAYBILL_LEASE_MS).toBe(3000);
  });

  it('`waybill runs` with such a lease exits 2 before opening the store', async () => {
    const dir = tempDir('waybill-lease-');
    const result = await runCli(['runs'], { env: { DATABASE_URL: `file:${dir.file('w.db')}`, WAYBILL_LEASE_MS: '1000' } });
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/WAYBILL_LEASE_MS: is 1000 ms, below SQLite's busy timeout of 5000 ms/);
    expect(existsSync(dir.file('w.db'))).toBe(false);
  });
});
