/**
 * /api/metrics once tokens are configured: a read like any page, so no token is 401, a wrong one is 401,
 * and either role's bearer token may scrape (Prometheus is given the viewer token).
 */
import { afterAll, describe, expect, it } from 'vitest';
import type { Store } from '../../lib/store/contract';
import { makeTempDir } from '../support/tmp';

const dir = makeTempDir('waybill-metrics-auth-');
const VIEWER = 'viewer-token-for-metrics-0123';
const OPERATOR = 'operator-token-for-metrics-0123';
process.env.DATABASE_URL = `file:${dir.file('w.db')}`;
process.env.WAYBILL_VIEWER_TOKEN = VIEWER;
process.env.WAYBILL_OPERATOR_TOKEN = OPERATOR;
const { GET } = await import('../../app/api/metrics/route');
const cache = globalThis as { waybillStore?: Promise<unknown> };

afterAll(async () => {
  await ((await cache.waybillStore) as Store | undefined)?.close();
  dir.remove();
});

const scrape = (headers: Record<string, string>) =>
  GET(
    new Request('http://waybill.internal:3000/api/metrics', { headers: { host: 'waybill.internal:3000', ...headers } }),
  );

describe('GET /api/metrics with tokens', () => {
  it('refuses a scrape without a valid token, and serves either role', async () => {
    const none = await scrape({});
    expect(none.status).toBe(401);
    expect(await none.json()).toMatchObject({ error: { code: 'UNAUTHENTICATED' } });
    expect(none.headers.get('www-authenticate')).toBe('Bearer realm="waybill"');
    expect((await scrape({ authorization: `Bearer ${VIEWER}x` })).status).toBe(401);
    expect((await scrape({ authorization: 'Basic abc' })).status).toBe(401);
    expect((await scrape({ cookie: 'waybill_session=forged.value' })).status).toBe(401);
    for (const token of [VIEWER, OPERATOR]) {
      const ok = await scrape({ authorization: `Bearer ${token}` });
      expect(ok.status).toBe(200);
      expect(await ok.text()).toContain('# TYPE waybill_steps_total counter');
    }
  });
});
