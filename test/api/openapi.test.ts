/**
 * GET /api/v1/openapi.json against the routes themselves: every route file under app/api and every method it
 * exports is in the document and nothing else is; and real answers of the route handlers, on a real SQLite
 * file, are held to the document's own response schemas (read back from the JSON, not from our zod). Also
 * GET /api/health: up, and 503 down once the store really fails.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createLogger } from '../../lib/engine/log';
import type { Store } from '../../lib/store/contract';
import { makeTempDir } from '../support/tmp';

const dir = makeTempDir('waybill-openapi-');
process.env.DATABASE_URL = `file:${dir.file('w.db')}`;
(globalThis as { waybillServerLog?: unknown }).waybillServerLog = createLogger({ component: 'web' }, () => undefined);
const cache = globalThis as { waybillStore?: Promise<unknown> };

afterAll(async () => {
  await ((await cache.waybillStore?.catch(() => undefined)) as Store | undefined)?.close();
  dir.remove();
});

const APP_API = fileURLToPath(new URL('../../app/api', import.meta.url));
const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const;

/** Every route file under app/api as (OpenAPI path, methods it exports); the catch-all 404 is not an endpoint. */
function routeFiles(): Map<string, string[]> {
  const out = new Map<string, string[]>();
  const walk = (folder: string) => {
    for (const entry of readdirSync(folder, { withFileTypes: true })) {
      const full = join(folder, entry.name);
      if (entry.isDirectory()) walk(full);
      else if (entry.name === 'route.ts') {
        const segments = relative(APP_API, folder).split(/[\\/]/);
        if (segments.some((s) => s.startsWith('[...'))) continue;
        const path = `/api/${segments.map((s) => s.replace(/^\[(\w+)\]$/, '{$1}')).join('/')}`;
        const source = readFileSync(full, 'utf8');
        const methods = METHODS.filter((m) =>
          new RegExp(`export (async )?function ${m}\\b|export \\{[^}]*\\bas ${m}\\b`).test(source),
        );
        out.set(path, methods.map((m) => m.toLowerCase()).sort());
      }
    }
  };
  walk(APP_API);
  return out;
}

const host = { host: '127.0.0.1:3000' };
const url = (path: string) => `http://127.0.0.1:3000${path}`;
const post = (path: string, body: unknown) =>
  new Request(url(path), {
    method: 'POST',
    headers: { ...host, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
const get = (path: string) => new Request(url(path), { headers: host });
const params = <T extends Record<string, string>>(p: T) => ({ params: Promise.resolve(p) });

type Doc = {
  openapi: string;
  paths: Record<
    string,
    Record<string, { responses: Record<string, { content?: Record<string, { schema: unknown }> }> }>
  >;
  components: { schemas: Record<string, unknown> };
};

const { GET: openapi } = await import('../../app/api/v1/openapi.json/route');
const doc = (await (await openapi(get('/api/v1/openapi.json'))).json()) as Doc;

/** The document's schema for one answer, with its one $ref (the error shape) put in place. */
function responseSchema(path: string, method: string, status: number): z.ZodType {
  const response = doc.paths[path]?.[method]?.responses[String(status)];
  if (!response) throw new Error(`the document has no ${status} answer for ${method.toUpperCase()} ${path}`);
  const schema = response.content!['application/json']!.schema as { $ref?: string };
  return z.fromJSONSchema(
    (schema.$ref ? doc.components.schemas[schema.$ref.split('/').pop()!] : schema) as Parameters<
      typeof z.fromJSONSchema
    >[0],
  );
}

/** A real answer held to the document: status, and the body against that status's schema. */
async function conforms(response: Response, path: string, method: string, status: number): Promise<unknown> {
  const body = await response.json();
  expect({ status: response.status, body }).toMatchObject({ status });
  const checked = responseSchema(path, method, status).safeParse(body);
  if (!checked.success)
    throw new Error(
      `${method.toUpperCase()} ${path} ${status} does not match the document: ${checked.error.message}\n${JSON.stringify(body)}`,
    );
  return body;
}

describe('GET /api/v1/openapi.json', () => {
  it('is an OpenAPI 3.1 document naming exactly the routes and methods under app/api', () => {
    expect(doc.openapi).toBe('3.1.0');
    const documented = new Map(Object.entries(doc.paths).map(([path, ops]) => [path, Object.keys(ops).sort()]));
    expect(Object.fromEntries(documented)).toEqual(Object.fromEntries(routeFiles()));
    for (const [path, ops] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(ops)) {
        const names = new Set<string>();
        for (const p of (op as { parameters?: { name: string; in: string }[] }).parameters ?? [])
          names.add(`${p.in}:${p.name}`);
        for (const name of path.match(/\{(\w+)\}/g) ?? [])
          expect(names, `${method} ${path}`).toContain(`path:${name.slice(1, -1)}`);
      }
    }
  });

  it('describes what the routes really answer: runs, a library run, the checkpoint protocol, claims, usage, errors', async () => {
    const runs = await import('../../app/api/v1/runs/route');
    const run = await import('../../app/api/v1/runs/[id]/route');
    const action = await import('../../app/api/v1/runs/[id]/[action]/route');
    const committed = await import('../../app/api/v1/runs/[id]/committed/route');
    const begin = await import('../../app/api/v1/checkpoint/[runId]/begin/route');
    const end = await import('../../app/api/v1/checkpoint/[runId]/end/route');
    const progress = await import('../../app/api/v1/checkpoint/[runId]/progress/route');
    const claim = await import('../../app/api/v1/checkpoint/claim/route');
    const renew = await import('../../app/api/v1/checkpoint/renew/route');
    const commit = await import('../../app/api/v1/checkpoint/commit/route');
    const release = await import('../../app/api/v1/checkpoint/release/route');
    const stream = await import('../../app/api/v1/checkpoint/stream/route');
    const usage = await import('../../app/api/v1/checkpoint/usage/route');
    const claims = await import('../../app/api/v1/claims/route');
    const sweep = await import('../../app/api/v1/claims/sweep/route');
    const bulk = await import('../../app/api/v1/runs/bulk/route');

    await conforms(
      await runs.POST(post('/api/v1/runs', { workflow: 'agent-batch', input: { count: 3 }, id: 'api-1' })),
      '/api/v1/runs',
      'post',
      201,
    );
    await conforms(
      await runs.POST(post('/api/v1/runs', { workflow: 'agent-batch', input: { count: 'x' } })),
      '/api/v1/runs',
      'post',
      400,
    );
    await conforms(
      await runs.POST(
        new Request(url('/api/v1/runs'), {
          method: 'POST',
          headers: { ...host, 'content-type': 'text/plain' },
          body: JSON.stringify({ workflow: 'agent-batch', input: { count: 3 } }),
        }),
      ),
      '/api/v1/runs',
      'post',
      415,
    );

    // A declared client run over the protocol: begin, claim, renew, commit with next, release the next, end.
    const p = '/api/v1/checkpoint/{runId}';
    const began = await conforms(
      await begin.POST(
        post('/api/v1/checkpoint/loop-1/begin', { workflow: 'nightly', totalSteps: 2, workerId: 'py' }),
        params({ runId: 'loop-1' }),
      ),
      `${p}/begin`,
      'post',
      200,
    );
    expect(began).toMatchObject({ run: { status: 'running', created: true, workflow: 'nightly', totalSteps: 2 } });
    const first = (await conforms(
      await claim.POST(post('/api/v1/checkpoint/claim', { runId: 'loop-1', key: 'loop-1:0', step: 0, workerId: 'py' })),
      '/api/v1/checkpoint/claim',
      'post',
      200,
    )) as { token: string };
    await conforms(
      await renew.POST(post('/api/v1/checkpoint/renew', { key: 'loop-1:0', token: first.token })),
      '/api/v1/checkpoint/renew',
      'post',
      200,
    );
    await conforms(
      await stream.POST(
        post('/api/v1/checkpoint/stream', { runId: 'loop-1', key: 'loop-1:0', token: first.token, seq: 0, text: 'hi' }),
      ),
      '/api/v1/checkpoint/stream',
      'post',
      200,
    );
    const usageBody = { runId: 'loop-1', key: 'loop-1:0', token: first.token, n: 0, model: 'gpt-4o' };
    await conforms(
      await usage.POST(post('/api/v1/checkpoint/usage', { ...usageBody, inputTokens: 10, outputTokens: 2 })),
      '/api/v1/checkpoint/usage',
      'post',
      200,
    );
    await conforms(
      await usage.POST(post('/api/v1/checkpoint/usage', { ...usageBody, inputTokens: -1, outputTokens: 2 })),
      '/api/v1/checkpoint/usage',
      'post',
      400,
    );
    const done = (await conforms(
      await commit.POST(
        post('/api/v1/checkpoint/commit', {
          runId: 'loop-1',
          key: 'loop-1:0',
          token: first.token,
          result: { n: 0 },
          step: 0,
          workerId: 'py',
          progress: { step: 1, state: { processed: 1 } },
          next: { key: 'loop-1:1', step: 1 },
        }),
      ),
      '/api/v1/checkpoint/commit',
      'post',
      200,
    )) as { next: { token: string }; run: unknown };
    expect(done.run).toEqual({ status: 'running' });
    await conforms(
      await release.POST(post('/api/v1/checkpoint/release', { key: 'loop-1:1', token: done.next.token })),
      '/api/v1/checkpoint/release',
      'post',
      200,
    );
    await conforms(
      await claim.POST(post('/api/v1/checkpoint/claim', { runId: 'loop-1', key: 'loop-1:0' })),
      '/api/v1/checkpoint/claim',
      'post',
      200,
    );
    await conforms(
      await commit.POST(
        post('/api/v1/checkpoint/commit', { runId: 'loop-1', key: 'loop-1:0', token: 'not-the-token', result: 1 }),
      ),
      '/api/v1/checkpoint/commit',
      'post',
      409,
    );
    await conforms(
      await progress.GET(get('/api/v1/checkpoint/loop-1/progress'), params({ runId: 'loop-1' })),
      `${p}/progress`,
      'get',
      200,
    );
    await conforms(
      await progress.PUT(
        new Request(url('/api/v1/checkpoint/loop-1/progress'), {
          method: 'PUT',
          headers: { ...host, 'content-type': 'application/json' },
          body: JSON.stringify({ step: 1, state: {} }),
        }),
        params({ runId: 'loop-1' }),
      ),
      `${p}/progress`,
      'put',
      200,
    );

    const listed = (await conforms(await runs.GET(get('/api/v1/runs')), '/api/v1/runs', 'get', 200)) as {
      runs: { id: string; workflow: string }[];
    };
    expect(listed.runs.map((r) => [r.id, r.workflow]).sort()).toEqual([
      ['api-1', 'agent-batch'],
      ['loop-1', 'nightly'],
    ]);
    await conforms(
      await run.GET(get('/api/v1/runs/loop-1'), params({ id: 'loop-1' })),
      '/api/v1/runs/{id}',
      'get',
      200,
    );
    await conforms(await run.GET(get('/api/v1/runs/nope'), params({ id: 'nope' })), '/api/v1/runs/{id}', 'get', 404);
    const runUsage = await import('../../app/api/v1/runs/[id]/usage/route');
    const workflowUsage = await import('../../app/api/v1/workflows/[name]/usage/route');
    await conforms(
      await runUsage.GET(get('/api/v1/runs/loop-1/usage'), params({ id: 'loop-1' })),
      '/api/v1/runs/{id}/usage',
      'get',
      200,
    );
    await conforms(
      await runUsage.GET(get('/api/v1/runs/nope/usage'), params({ id: 'nope' })),
      '/api/v1/runs/{id}/usage',
      'get',
      404,
    );
    await conforms(
      await workflowUsage.GET(get('/api/v1/workflows/nightly/usage'), params({ name: 'nightly' })),
      '/api/v1/workflows/{name}/usage',
      'get',
      200,
    );
    await conforms(
      await workflowUsage.GET(get('/api/v1/workflows/Nightly/usage'), params({ name: 'Nightly' })),
      '/api/v1/workflows/{name}/usage',
      'get',
      400,
    );
    await conforms(
      await committed.GET(get('/api/v1/runs/loop-1/committed'), params({ id: 'loop-1' })),
      '/api/v1/runs/{id}/committed',
      'get',
      200,
    );
    await conforms(
      await action.POST(post('/api/v1/runs/loop-1/pause', {}), params({ id: 'loop-1', action: 'pause' })),
      '/api/v1/runs/{id}/{action}',
      'post',
      200,
    );
    await conforms(
      await action.POST(post('/api/v1/runs/loop-1/retry', {}), params({ id: 'loop-1', action: 'retry' })),
      '/api/v1/runs/{id}/{action}',
      'post',
      409,
    );
    await conforms(
      await bulk.POST(post('/api/v1/runs/bulk', { action: 'pause', filter: { status: 'completed' } })),
      '/api/v1/runs/bulk',
      'post',
      200,
    );
    await conforms(
      await bulk.POST(post('/api/v1/runs/bulk', { action: 'pause', filter: { status: 'nope' } })),
      '/api/v1/runs/bulk',
      'post',
      400,
    );
    const ended = await conforms(
      await end.POST(
        post('/api/v1/checkpoint/loop-1/end', { outcome: 'stopped', workerId: 'py' }),
        params({ runId: 'loop-1' }),
      ),
      `${p}/end`,
      'post',
      200,
    );
    expect(ended).toEqual({ run: { id: 'loop-1', status: 'paused' } });
    await conforms(await claims.GET(get('/api/v1/claims')), '/api/v1/claims', 'get', 200);
    await conforms(await sweep.POST(post('/api/v1/claims/sweep', {})), '/api/v1/claims/sweep', 'post', 200);

    // What a rewind of api-1 would redo cost last time (nothing: no worker ran it), and a bad step.
    const rewindCost = await import('../../app/api/v1/runs/[id]/rewind-cost/route');
    const c = '/api/v1/runs/{id}/rewind-cost';
    const cost = await conforms(
      await rewindCost.GET(get('/api/v1/runs/api-1/rewind-cost?from=0'), params({ id: 'api-1' })),
      c,
      'get',
      200,
    );
    expect(cost).toMatchObject({ fromStep: 0, calls: 0, text: expect.stringContaining('no model calls recorded') });
    await conforms(
      await rewindCost.GET(get('/api/v1/runs/api-1/rewind-cost?from=1.5'), params({ id: 'api-1' })),
      c,
      'get',
      400,
    );

    // What a rerun of api-1 would do: its last cost, and no child runs to let go (it started none).
    const rerunPreview = await import('../../app/api/v1/runs/[id]/rerun-preview/route');
    const rp = '/api/v1/runs/{id}/rerun-preview';
    const preview = await conforms(
      await rerunPreview.GET(get('/api/v1/runs/api-1/rerun-preview?from=0'), params({ id: 'api-1' })),
      rp,
      'get',
      200,
    );
    expect(preview).toMatchObject({ fromStep: 0, letGo: { count: 0, children: [], text: 'lets go no child runs' } });
    await conforms(
      await rerunPreview.GET(get('/api/v1/runs/api-1/rerun-preview?from=-1'), params({ id: 'api-1' })),
      rp,
      'get',
      400,
    );

    // The operators' log those actions wrote: a start and a pause, as the API's local caller.
    const { GET: auditLog } = await import('../../app/api/v1/audit/route');
    const logged = (await conforms(await auditLog(get('/api/v1/audit?limit=1')), '/api/v1/audit', 'get', 200)) as {
      entries: { action: string }[];
      next: number | null;
    };
    expect([logged.entries.map((e) => e.action), typeof logged.next]).toEqual([['pause'], 'number']);
    await conforms(await auditLog(get('/api/v1/audit?since=yesterday')), '/api/v1/audit', 'get', 400);
  });
});

describe('GET /api/health', () => {
  it('answers up with no auth, and 503 down once the store fails', async () => {
    const { GET } = await import('../../app/api/health/route');
    const up = await GET();
    expect(up.status).toBe(200);
    await conforms(up, '/api/health', 'get', 200);
    // A real failure: the server's store closed under the handler.
    await ((await cache.waybillStore) as Store).close();
    const down = await GET();
    expect(down.status).toBe(503);
    expect(down.headers.get('retry-after')).toBe('1');
    expect(await down.json()).toEqual({ ok: false, store: 'down' });
  });
});
