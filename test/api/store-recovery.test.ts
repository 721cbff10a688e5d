/**
 * The control plane's store is opened on the first request. When that fails (the database is unreachable),
 * the failure must not be cached: once the database is back, the next request succeeds without a restart.
 */
import { rmSync, writeFileSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../lib/engine/log';
import type { Store } from '../../lib/store/contract';
import { makeTempDir } from '../support/tmp';

const dir = makeTempDir('waybill-store-recovery-');
// A file where the database's directory should be: opening fails until it is removed.
const blocker = dir.file('data');
writeFileSync(blocker, 'not a directory');
process.env.DATABASE_URL = `file:${dir.file('data/w.db')}`;
// The server's log, caught: the failure's details must be there and not in the response.
const logged: string[] = [];
(globalThis as { waybillServerLog?: unknown }).waybillServerLog = createLogger({ component: 'web' }, (line) =>
  logged.push(line),
);
const { GET } = await import('../../app/api/metrics/route');
const cache = globalThis as { waybillStore?: Promise<unknown> };

afterAll(async () => {
  await ((await cache.waybillStore?.catch(() => undefined)) as Store | undefined)?.close();
  dir.remove();
});

const scrape = () => GET(new Request('http://127.0.0.1:3000/api/metrics', { headers: { host: '127.0.0.1:3000' } }));

describe('control plane store', () => {
  it('answers 500 while the store cannot be opened, and 200 once it can, without a restart', async () => {
    const failed = await scrape();
    expect(failed.status).toBe(500);
    expect(await failed.text()).not.toContain('EEXIST');
    expect((await scrape()).status).toBe(500);
    const lines = logged.map((l) => JSON.parse(l) as { msg: string; error: string });
    expect(lines.map((l) => l.msg)).toEqual(['metrics scrape failed', 'metrics scrape failed']);
    expect(lines[0]!.error).toMatch(/EEXIST/);
    rmSync(blocker);
    const ok = await scrape();
    expect(ok.status).toBe(200);
    expect(await ok.text()).toContain('waybill_runs{status="queued"} 0');
  });
});
