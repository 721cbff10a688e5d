/**
 * The control plane's HTTP API on a real port, for tests whose clients are other processes (Python agents,
 * workers' spawned programs): a node:http server that hands each request to the route handler Next.js would
 * run for its path — the very modules under app/api/v1, found by walking the folder — as a web Request, and
 * writes back its Response. Not `next start`: that needs a production build, minutes this suite does not have;
 * the handlers, their authorization and their store are the real ones.
 *
 * Import it only after setting DATABASE_URL and the auth variables: the handlers read lib/config once.
 */
import { readdirSync, statSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { fileURLToPath, pathToFileURL } from 'node:url';

const API_DIR = fileURLToPath(new URL('../../app/api', import.meta.url));

type Segment = { kind: 'static'; name: string } | { kind: 'param'; name: string } | { kind: 'rest'; name: string };
interface RouteFile {
  segments: Segment[];
  file: string;
}
type Handler = (request: Request, context: { params: Promise<Record<string, string | string[]>> }) => Promise<Response>;

function routeFiles(dir: string, prefix: Segment[] = [{ kind: 'static', name: 'api' }]): RouteFile[] {
  const out: RouteFile[] = [];
  for (const name of readdirSync(dir)) {
    const full = join(dir, name);
    if (statSync(full).isDirectory()) {
      const rest = /^\[\.\.\.(\w+)\]$/.exec(name);
      const param = /^\[(\w+)\]$/.exec(name);
      const segment: Segment = rest
        ? { kind: 'rest', name: rest[1]! }
        : param
          ? { kind: 'param', name: param[1]! }
          : { kind: 'static', name };
      out.push(...routeFiles(full, [...prefix, segment]));
    } else if (name === 'route.ts') {
      out.push({ segments: prefix, file: full });
    }
  }
  return out;
}

/** Next's precedence: a static segment before a dynamic one, a dynamic one before a catch-all. */
function rank(route: RouteFile): string {
  return route.segments.map((s) => (s.kind === 'static' ? '0' : s.kind === 'param' ? '1' : '2')).join('');
}

function match(route: RouteFile, parts: string[]): Record<string, string | string[]> | null {
  const params: Record<string, string | string[]> = {};
  for (let i = 0; i < route.segments.length; i++) {
    const s = route.segments[i]!;
    if (s.kind === 'rest') {
      if (i >= parts.length) return null;
      params[s.name] = parts.slice(i);
      return params;
    }
    if (i >= parts.length) return null;
    if (s.kind === 'static' && s.name !== parts[i]) return null;
    if (s.kind === 'param') params[s.name] = parts[i]!;
  }
  return parts.length === route.segments.length ? params : null;
}

export interface RouteServer {
  url: string;
  close(): Promise<void>;
}

export async function startRouteServer(): Promise<RouteServer> {
  const routes = routeFiles(API_DIR).sort((a, b) => rank(a).localeCompare(rank(b)));
  const modules = new Map<string, Record<string, Handler>>();
  const load = async (file: string) => {
    let m = modules.get(file);
    if (!m) {
      m = (await import(pathToFileURL(file).href)) as Record<string, Handler>;
      modules.set(file, m);
    }
    return m;
  };
  const server: Server = createServer((req, res) => {
    void answer(req).then(
      async (response) => {
        res.writeHead(response.status, Object.fromEntries(response.headers.entries()));
        res.end(Buffer.from(await response.arrayBuffer()));
      },
      (error: unknown) => {
        res.writeHead(500, { 'content-type': 'text/plain' });
        res.end(`route server: ${(error as Error).stack ?? String(error)}`);
      },
    );
  });
  async function answer(req: IncomingMessage): Promise<Response> {
    const url = new URL(req.url ?? '/', `http://${req.headers.host ?? '127.0.0.1'}`);
    // Next decodes each path segment once before handing it to the route as a param.
    const parts = url.pathname
      .split('/')
      .filter(Boolean)
      .map((p) => decodeURIComponent(p));
    const headers = new Headers();
    for (const [name, value] of Object.entries(req.headers)) {
      if (typeof value === 'string') headers.set(name, value);
      else if (Array.isArray(value)) headers.set(name, value.join(', '));
    }
    const hasBody = req.method !== 'GET' && req.method !== 'HEAD';
    const request = new Request(url, {
      method: req.method,
      headers,
      body: hasBody ? (Readable.toWeb(req) as ReadableStream<Uint8Array>) : undefined,
      // @ts-expect-error Node's fetch needs duplex for a streamed body; lib.dom's RequestInit does not know it
      duplex: 'half',
    });
    for (const route of routes) {
      const params = match(route, parts);
      if (!params) continue;
      const handler = (await load(route.file))[req.method ?? 'GET'];
      if (!handler) return new Response(null, { status: 405 });
      return handler(request, { params: Promise.resolve(params) });
    }
    return new Response('not found', { status: 404, headers: { 'content-type': 'text/plain' } });
  }
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('route server: no port');
  return {
    url: `http://127.0.0.1:${address.port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export interface ApiRoles {
  operator: string;
  viewer: string;
  sessionSecret: string;
}

/**
 * The routes over the SQLite file `file` with both role tokens set: what a suite of the HTTP API starts before
 * its tests. Its close() also closes the store the handlers opened, which lib/data/store.ts keeps on globalThis.
 */
export async function serveApi(file: string, roles: ApiRoles): Promise<RouteServer> {
  process.env.DATABASE_URL = `file:${file}`;
  process.env.WAYBILL_OPERATOR_TOKEN = roles.operator;
  process.env.WAYBILL_VIEWER_TOKEN = roles.viewer;
  process.env.WAYBILL_SESSION_SECRET = roles.sessionSecret;
  const server = await startRouteServer();
  const cache = globalThis as { waybillStore?: Promise<{ close(): Promise<void> }> };
  return {
    url: server.url,
    async close() {
      await server.close();
      await (await cache.waybillStore?.catch(() => undefined))?.close();
    },
  };
}
