/**
 * What an API route answers for a method it does not serve. Next.js answers a method a route file does not
 * export with a bare 405 (no body, no Allow), and OPTIONS with an Allow naming whatever the file exports. So
 * each route file exports every other method from here, by its path in the OpenAPI table (openapi.ts, the one
 * list of what each route serves; test/api/methods.test.ts holds each file's exports to it):
 *
 *   export const { PUT, PATCH, DELETE, OPTIONS } = otherMethods('/api/v1/runs', authorizeRequest);
 *
 * Each answers 405 METHOD_NOT_ALLOWED in the API's error shape, with Allow; OPTIONS answers 204 with Allow.
 * HEAD is served where GET is (Next answers it from GET), and OPTIONS everywhere. Like the catch-all's 404,
 * these answer after the sign-in check (the route's own role aside: any token will do), so the API's surface is
 * not mapped by someone without a token. Methods no route serves (TRACE, PROPFIND) never reach a route:
 * lib/launch/http-guard.mjs answers them.
 */
import { errorBody, handle, json, refused } from './errors';
import { ROUTES } from './openapi';

/** The methods a route file may export, in the order Allow lists them. */
export const ROUTE_METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'] as const;
export type RouteMethod = (typeof ROUTE_METHODS)[number];

type Handler = (request: Request) => Promise<Response>;
/** lib/auth's authorizeRequest, which lib/api does not import (it is Next's). */
type Authorize = (
  request: Request,
  need: 'viewer',
  options: { mutation: false; run: 'any' },
) => Promise<{ refusal: { status: 401 | 403; message: string } | null }>;

/** What the route at `path` serves: the table's methods, HEAD with GET, and OPTIONS. */
export function allowedMethods(path: string): RouteMethod[] {
  const served = new Set<string>(ROUTES.filter((r) => r.path === path).map((r) => r.method.toUpperCase()));
  if (served.size === 0) throw new Error(`lib/api/methods: no route ${path} in lib/api/openapi.ts`);
  if (served.has('GET')) served.add('HEAD');
  served.add('OPTIONS');
  return ROUTE_METHODS.filter((m) => served.has(m));
}

const made = new Map<string, Partial<Record<RouteMethod, Handler>>>();

/**
 * The handlers of the route at `path` for the methods it does not serve, and its OPTIONS. The same object for
 * the same path, so a test can tell these from a route's own handlers. `authorize` is the route's
 * authorizeRequest; only a route open to all (`access: 'none'`: /api/health) goes without.
 */
export function otherMethods(path: string, authorize?: Authorize): Partial<Record<RouteMethod, Handler>> {
  const known = made.get(path);
  if (known) return known;
  const open = ROUTES.some((r) => r.path === path && r.access === 'none');
  if (!open && !authorize) throw new Error(`lib/api/methods: ${path} needs authorizeRequest to answer other methods`);
  const allowed = allowedMethods(path);
  const allow = allowed.join(', ');
  const answer = (make: (request: Request) => Response): Handler => {
    return (request) =>
      handle(request, async () => {
        if (!open) {
          const { refusal } = await authorize!(request, 'viewer', { mutation: false, run: 'any' });
          if (refusal) return refused(refusal);
        }
        return make(request);
      });
  };
  const handlers: Partial<Record<RouteMethod, Handler>> = {
    OPTIONS: answer(() => new Response(null, { status: 204, headers: { allow, 'cache-control': 'no-store' } })),
  };
  for (const method of ROUTE_METHODS) {
    if (allowed.includes(method)) continue;
    handlers[method] = answer(() =>
      json(errorBody('METHOD_NOT_ALLOWED', `method ${method} is not allowed on ${path}: use one of ${allow}`), 405, {
        allow,
      }),
    );
  }
  made.set(path, handlers);
  return handlers;
}
