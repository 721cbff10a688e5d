/**
 * What lets the dashboard serve the gateway as `waybill gateway` does, without a browser or a build
 * (e2e/gateway.spec.ts runs the real dashboard): the deps both build (lib/gateway/deps.ts) answering a Web
 * Request as the route hands it over, the browser refusals, and the guard in front of Next letting a model
 * request's large body through under /v1 only.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type Config, parseConfig } from '../../lib/config';
import { gatewayDeps } from '../../lib/gateway/deps';
import { handleGatewayRequest } from '../../lib/gateway/handler';
import { priceTableAt } from '../../lib/gateway/prices';
import { REPLAYED_HEADER } from '../../lib/gateway/record';
import { MAX_REQUEST_BYTES } from '../../lib/gateway/routes';
import { refusal } from '../../lib/launch/http-guard.mjs';
import { type StoreHandle, sqliteBackend } from '../support/backends';
import { type ModelUpstream, startModelUpstream } from '../support/model-upstream';

const OPERATOR = 'operator-token-of-the-served-gateway-tests';
const PROVIDER_KEY = 'sk-provider-key-of-the-served-gateway-tests';

describe('the gateway as the dashboard serves it', () => {
  let h: StoreHandle;
  let upstream: ModelUpstream;
  let cfg: Config;
  const warnings: string[] = [];

  beforeEach(async () => {
    h = await sqliteBackend.open();
    upstream = await startModelUpstream();
    cfg = parseConfig({
      DATABASE_URL: 'file:unused.db',
      WAYBILL_OPERATOR_TOKEN: OPERATOR,
      WAYBILL_GATEWAY_OPENAI_URL: `${upstream.url}/v1`,
      WAYBILL_GATEWAY_OPENAI_KEY: PROVIDER_KEY,
    });
    warnings.length = 0;
  });
  afterEach(async () => {
    await upstream.close();
    await h.close();
  });

  const call = (headers: Record<string, string>, content = 'served hello') => {
    const deps = gatewayDeps(h.store, cfg, priceTableAt(undefined), (message) => warnings.push(message));
    return handleGatewayRequest(
      new Request('http://127.0.0.1:3000/v1/chat/completions', {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${OPERATOR}`, ...headers },
        body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content }] }),
      }),
      deps,
    );
  };

  it('goes upstream once with the provider key, then answers from the store; another body is 422', async () => {
    const first = await call({ 'idempotency-key': 'served-run:step:0' });
    expect(first.status).toBe(200);
    expect(first.headers.get(REPLAYED_HEADER)).toBeNull();
    const firstText = await first.text();
    const again = await call({ 'idempotency-key': 'served-run:step:0' });
    expect(again.headers.get(REPLAYED_HEADER)).toBe('true');
    expect(await again.text()).toBe(firstText);
    expect((await call({ 'idempotency-key': 'served-run:step:0' }, 'another body')).status).toBe(422);
    expect(upstream.calls.map((c) => c.authorization)).toEqual([`Bearer ${PROVIDER_KEY}`]);
    expect(warnings).toEqual([]);
  });

  it('refuses a page of another site, and without tokens a Host that is not loopback; nothing goes upstream', async () => {
    const crossSite = await call({ origin: 'https://evil.example', 'idempotency-key': 'served-run:step:1' });
    expect(crossSite.status).toBe(403);
    expect(await crossSite.text()).toMatch(/cross-site request refused/);
    expect((await call({ 'sec-fetch-site': 'cross-site' })).status).toBe(403);
    cfg = parseConfig({ DATABASE_URL: 'file:unused.db', WAYBILL_GATEWAY_OPENAI_URL: `${upstream.url}/v1` });
    expect((await call({ host: 'rebound.example:3000' })).status).toBe(403);
    expect((await call({ host: '127.0.0.1:3000' })).status).toBe(200);
    expect(upstream.calls).toHaveLength(1);
  });
});

describe('the guard in front of the dashboard', () => {
  const API_LIMIT = 1_310_720;
  const bytes = (n: number) => String(n);

  it('lets a model request up to the gateway limit through under /v1, and refuses beyond it in JSON', () => {
    expect(refusal('POST', '/v1/chat/completions', bytes(20 * 1024 * 1024), API_LIMIT, MAX_REQUEST_BYTES)).toBeNull();
    expect(refusal('POST', '/v1/messages', bytes(MAX_REQUEST_BYTES), API_LIMIT, MAX_REQUEST_BYTES)).toBeNull();
    const over = refusal('POST', '/v1/messages', bytes(MAX_REQUEST_BYTES + 1), API_LIMIT, MAX_REQUEST_BYTES);
    expect(over).toMatchObject({ status: 413, api: true, code: 'PAYLOAD_TOO_LARGE', limit: MAX_REQUEST_BYTES });
  });

  it('keeps the API and the pages to their own limit', () => {
    for (const path of ['/api/v1/runs', '/runs', '/v1x/chat'])
      expect(refusal('POST', path, bytes(20 * 1024 * 1024), API_LIMIT, MAX_REQUEST_BYTES)?.status).toBe(413);
  });
});
