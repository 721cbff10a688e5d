/**
 * A method an API route does not serve: 405 METHOD_NOT_ALLOWED in the API's error shape, with an Allow naming
 * what it does serve, not Next's bare 405. Every route file under app/api, imported as Next imports it: its
 * own handlers are exactly the OpenAPI table's methods for its path (lib/api/openapi.ts), and every other
 * method is lib/api/methods.ts's answer, so the files, the table and Allow cannot drift apart. As the
 * catch-all's 404, the answer comes after the sign-in check; /api/health, open to all, answers without one.
 */
import { readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../lib/engine/log';
import type { Store } from '../../lib/store/contract';
import { makeTempDir } from '../support/tmp';

const OPERATOR = 'methods-operator-token-0123456789';
const VIEWER = 'methods-viewer-token-0123456789ab';
const dir = makeTempDir('waybill-methods-');
process.env.DATABASE_URL = `file:${dir.file('w.db')}`;
process.env.WAYBILL_OPERATOR_TOKEN = OPERATOR;
process.env.WAYBILL_VIEWER_TOKEN = VIEWER;
process.env.WAYBILL_SESSION_SECRET = 'methods-session-secret-0123456789';
(globalThis as { waybillServerLog?: unknown }).waybillServerLog = createLogger({ component: 'web' }, () => undefined);
const cache = globalThis as { waybillStore?: Promise<unknown> };

afterAll(async () => {
  await ((await cache.waybillStore?.catch(() => undefined)) as Store | undefined)?.close();
  dir.remove();
});

const { ROUTES } = await import('../../lib/api/openapi');
const { otherMethods, ROUTE_METHODS } = await import('../../lib/api/methods');

type Handler = (request: Request, context?: unknown) => Promise<Response>;
const APP_API = fileURLToPath(new URL('../../app/api', import.meta.url));

/** Every route file under app/api as its OpenAPI path and its module; the catch-all 404 apart. */
async function routeModules(): Promise<Map<string, Record<string, unknown>>> {
  const files: [string, string][] = [];
  const walk = (folder: string) => {
    for (const entry of readdirSync(folder, { withFileTypes: true })) {
      const full = join(folder, entry.name);
      if (entry.isDirectory()) walk(full);
      else if (entry.name === 'route.ts') {
        const segments = relative(APP_API, folder).split(/[\\/]/);
        if (segments.some((s) => s.startsWith('[...'))) continue;
        files.push([`/api/${segments.map((s) => s.replace(/^\[(\w+)\]$/, '{$1}')).join('/')}`, full]);
      }
    }
  };
  walk(APP_API);
  const out = new Map<string, Record<string, unknown>>();
  for (const [path, file] of files) out.set(path, await import(pathToFileURL(file).href));
  return out;
}
const modules = await routeModules();

/** A concrete URL for a path template. */
const concrete = (path: string) => path.replace(/\{(\w+)\}/g, (_, name: string) => `some-${name}`);
const call = (handler: unknown, method: string, path: string, token: string | null = OPERATOR) =>
  (handler as Handler)(
    new Request(`http://127.0.0.1:3000${path}`, {
      method,
      headers: { host: '127.0.0.1:3000', ...(token ? { authorization: `Bearer ${token}` } : {}) },
    }),
    { params: Promise.resolve({}) },
  );

describe('a method an API route does not serve', () => {
  it("exports from every route file its table methods as its own and every other method as lib/api/methods' answer", () => {
    const table = new Map<string, string[]>();
    for (const route of ROUTES) table.set(route.path, [...(table.get(route.path) ?? []), route.method.toUpperCase()]);
    expect([...modules.keys()].sort()).toEqual([...table.keys()].sort());
    const wrong: string[] = [];
    for (const [path, module] of modules) {
      const served = table.get(path)!;
      const others = otherMethods(path);
      for (const method of ROUTE_METHODS) {
        const exported = module[method];
        const expected = served.includes(method)
          ? 'its own'
          : method === 'HEAD' && served.includes('GET')
            ? 'none (Next answers HEAD from GET)'
            : 'the answer of lib/api/methods';
        const actual =
          exported === undefined
            ? 'none (Next answers HEAD from GET)'
            : exported === others[method]
              ? 'the answer of lib/api/methods'
              : 'its own';
        if (actual !== expected) wrong.push(`${path} ${method}: ${actual}, expected ${expected}`);
      }
    }
    expect(wrong).toEqual([]);
  });

  it('answers 405 METHOD_NOT_ALLOWED in JSON naming the method and the allowed ones, with Allow', async () => {
    const seen = async (path: string, method: string) => {
      const response = await call(modules.get(path)![method], method, concrete(path));
      return {
        status: response.status,
        allow: response.headers.get('allow'),
        type: response.headers.get('content-type'),
        body: await response.json(),
      };
    };
    // The reviewer's four.
    expect(await seen('/api/v1/schedules/{name}', 'GET')).toEqual({
      status: 405,
      allow: 'DELETE, OPTIONS',
      type: 'application/json',
      body: {
        error: {
          code: 'METHOD_NOT_ALLOWED',
          message: 'method GET is not allowed on /api/v1/schedules/{name}: use one of DELETE, OPTIONS',
        },
      },
    });
    expect(await seen('/api/v1/events', 'GET')).toMatchObject({ status: 405, allow: 'POST, OPTIONS' });
    expect(await seen('/api/v1/runs/{id}', 'DELETE')).toMatchObject({ status: 405, allow: 'GET, HEAD, OPTIONS' });
    expect(await seen('/api/v1/runs', 'PATCH')).toMatchObject({
      status: 405,
      allow: 'GET, HEAD, POST, OPTIONS',
      body: {
        error: {
          code: 'METHOD_NOT_ALLOWED',
          message: 'method PATCH is not allowed on /api/v1/runs: use one of GET, HEAD, POST, OPTIONS',
        },
      },
    });
    // Every other method of every route, alike.
    let answered = 0;
    for (const [path, module] of modules) {
      for (const method of ROUTE_METHODS) {
        const refusal = otherMethods(path)[method];
        if (refusal === undefined || module[method] !== refusal || method === 'OPTIONS') continue;
        const got = await seen(path, method);
        expect(got.status, `${method} ${path}`).toBe(405);
        expect(got.body.error.code, `${method} ${path}`).toBe('METHOD_NOT_ALLOWED');
        expect(got.body.error.message, `${method} ${path}`).toBe(
          `method ${method} is not allowed on ${path}: use one of ${got.allow}`,
        );
        expect(got.allow!.split(', '), `${method} ${path}`).not.toContain(method);
        answered++;
      }
    }
    expect(answered).toBeGreaterThan(150);
  });

  it("answers OPTIONS 204 with the route's own Allow, not one naming the refusals", async () => {
    const options = async (path: string) => {
      const response = await call(modules.get(path)!.OPTIONS, 'OPTIONS', concrete(path));
      return [response.status, response.headers.get('allow'), await response.text()];
    };
    expect(await options('/api/v1/runs')).toEqual([204, 'GET, HEAD, POST, OPTIONS', '']);
    expect(await options('/api/v1/checkpoint/{runId}/progress')).toEqual([204, 'GET, HEAD, PUT, OPTIONS', '']);
    expect(await options('/api/v1/webhooks/{id}')).toEqual([204, 'DELETE, OPTIONS', '']);
  });

  it('signs in first, as the 404 does: no token is 401, any token (a viewer) gets the 405; /api/health needs none', async () => {
    const unsigned = await call(modules.get('/api/v1/events')!.GET, 'GET', '/api/v1/events', null);
    expect([unsigned.status, (await unsigned.json()).error.code]).toEqual([401, 'UNAUTHENTICATED']);
    expect((await call(modules.get('/api/v1/events')!.OPTIONS, 'OPTIONS', '/api/v1/events', null)).status).toBe(401);
    const viewer = await call(modules.get('/api/v1/events')!.GET, 'GET', '/api/v1/events', VIEWER);
    expect([viewer.status, viewer.headers.get('allow')]).toEqual([405, 'POST, OPTIONS']);
    const health = await call(modules.get('/api/health')!.POST, 'POST', '/api/health', null);
    expect([health.status, health.headers.get('allow'), (await health.json()).error.code]).toEqual([
      405,
      'GET, HEAD, OPTIONS',
      'METHOD_NOT_ALLOWED',
    ]);
  });

  it('answers OPTIONS on a path with no endpoint as every other method: the JSON 404', async () => {
    const { OPTIONS } = await import('../../app/api/v1/[...path]/route');
    const response = await call(OPTIONS, 'OPTIONS', '/api/v1/nothing-here');
    expect([response.status, (await response.json()).error.code]).toEqual([404, 'NOT_FOUND']);
    expect((await call(OPTIONS, 'OPTIONS', '/api/v1/nothing-here', null)).status).toBe(401);
  });
});
