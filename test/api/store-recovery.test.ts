/**
 * The control plane's store is opened on the first request. When that fails (the database is unreachable),
 * the failure must not be cached: once the database is back, the next request succeeds without a restart.
 */
import { rmSync, writeFileSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import type { Store } from '../../lib/store/types';
import { makeTempDir } from '../support/tmp';

const dir = makeTempDir('waybill-store-recovery-');
// A file where the database's directory should be: opening fails until it is removed.
const blocker = dir.file('data');
writeFileSync(blocker, 'not a directory');
process.env.DATABASE_URL = `file:${dir.file('data/w.db')}`;
const { GET } = await import('../../app/api/metrics/route');
const cache = globalThis as { waybillStore?: Promise<unknown> };

afterAll(async () => {
  await ((await cache.waybillStore?.catch(() => undefined)) as Store | undefined)?.close();
  dir.remove();
});

const scrape = () => GET(new Request('http://127.0.0.1:3000/api/metrics', { headers: { host: '127.0.0.1:3000' } }));

describe('control plane store', () => {
  it('answers 500 while the store cannot be opened, and 200 once it can, without a restart', async () => {
    expect((await scrape()).status).toBe(500);
    expect((await scrape()).status).toBe(500);
    rmSync(blocker);
    const ok = await scrape();
    expect(ok.status).toBe(200);
    expect(await ok.text()).toContain('waybill_runs{status="queued"} 0');
  });
});
