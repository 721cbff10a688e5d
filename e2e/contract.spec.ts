/**
 * The contract endpoints on the secured server (both role tokens set), through the real proxy and Next.js:
 * /api/health answers a load balancer with no token; /api/v1/openapi.json is a read like any other.
 */
import { OPERATOR, SECURED, VIEWER } from './support/api';
import { expect, noChromium, test } from './support/test';

test.describe('contract endpoints', () => {
  test.skip(noChromium, 'chromium is not installed');

  test('health needs no token; the OpenAPI document needs the viewer token and lists the routes', async ({
    request,
  }) => {
    const health = await request.get(`${SECURED}/api/health`);
    expect(health.status()).toBe(200);
    expect(await health.json()).toEqual({ ok: true, store: 'up' });
    expect(health.headers()['cache-control']).toBe('no-store');

    expect((await request.get(`${SECURED}/api/v1/openapi.json`)).status()).toBe(401);
    for (const who of [VIEWER, OPERATOR]) {
      const doc = await request.get(`${SECURED}/api/v1/openapi.json`, { headers: who });
      expect(doc.status()).toBe(200);
      const body = (await doc.json()) as { openapi: string; paths: Record<string, unknown> };
      expect(body.openapi).toBe('3.1.0');
      expect(Object.keys(body.paths)).toEqual(
        expect.arrayContaining([
          '/api/health',
          '/api/v1/runs',
          '/api/v1/checkpoint/commit',
          '/api/v1/checkpoint/{runId}/begin',
        ]),
      );
    }
  });
});
