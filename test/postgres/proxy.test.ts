/**
 * The harness's proxy (test/support/postgres.ts) as e2e's store-outage spec uses it, checked here because
 * that spec needs a browser: cut() drops every connection and refuses new ones, open() lets them through,
 * and a store behind it comes back without being reopened.
 */
import { describe, expect, it, onTestFinished } from 'vitest';
import { openStore } from '../../lib/store/index';
import { postgresAvailable, startPgProxy, testSchema } from '../support/postgres';

const pgUp = await postgresAvailable('PostgreSQL proxy tests');

describe.skipIf(!pgUp)('postgres proxy', () => {
  it('cut refuses every connection until open, and the store behind it recovers by itself', async () => {
    const schema = await testSchema('wb_proxy');
    const proxy = await startPgProxy();
    onTestFinished(() => proxy.close());
    const url = new URL(proxy.url);
    url.searchParams.set('schema', schema.name);
    const store = await openStore(url.toString());
    onTestFinished(() => store.close());
    await store.saveProgress({ runId: 'r', step: 1, stateJson: '{}', executed: 1, skipped: 0, awaited: 0 });

    proxy.cut();
    await expect(store.loadProgress('r')).rejects.toMatchObject({ code: 'STORE_UNAVAILABLE' });
    proxy.open();
    expect(await store.loadProgress('r')).toMatchObject({ step: 1, executed: 1 });
    expect(proxy.lost).toBe(0);
  });
});
