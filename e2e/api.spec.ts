/**
 * Issue 6, item 4: the HTTP API on the secured server. Nobody in who does not belong (401 without a token,
 * 403 for a viewer's mutation or a cross-site one), nothing written by a refused request (the database's
 * snapshot is the same after), every bad request a 4xx naming its problem, and every operator action audited.
 */

import { apiError, apiRoutes, call, countWhere, OPERATOR, readSecured, snapshot, VIEWER } from './support/api';
import { expect, noChromium, test, uniqueId } from './support/test';

test.skip(noChromium, 'no chromium');

test.beforeAll(async ({ request }) => {
  // The server opens (and migrates) its store on the first call: snapshots must not see that as a write.
  expect((await call(request, 'GET', '/api/v1/runs', { headers: VIEWER })).status()).toBe(200);
});

test('every route: no token → 401, a viewer on a mutation → 403, and the store is unchanged', async ({ request }) => {
  const routes = apiRoutes();
  expect(routes).toHaveLength(18);
  for (const route of routes) {
    const before = snapshot();
    const anonymous = await call(request, route.method, route.path, { body: route.body });
    expect(anonymous.status(), `${route.method} ${route.path}`).toBe(401);
    expect(anonymous.headers()['www-authenticate']).toBe('Bearer realm="waybill"');
    expect((await apiError(anonymous)).code).toBe('UNAUTHENTICATED');
    // A token that is not ours is nobody too.
    expect(
      (
        await call(request, route.method, route.path, {
          body: route.body,
          headers: { authorization: 'Bearer e2e-wrong-token-0123456789' },
        })
      ).status(),
    ).toBe(401);
    if (route.mutation) {
      const viewer = await call(request, route.method, route.path, { body: route.body, headers: VIEWER });
      expect(viewer.status(), `${route.method} ${route.path}`).toBe(403);
      expect(await apiError(viewer)).toEqual({
        code: 'FORBIDDEN',
        message: 'the viewer role may not do this: it needs operator',
      });
    } else {
      expect([200, 404], `${route.method} ${route.path}`).toContain(
        (await call(request, route.method, route.path, { headers: VIEWER })).status(),
      );
    }
    expect(snapshot(), `${route.method} ${route.path}`).toEqual(before);
  }
});

test('a cross-site mutation is refused even with the operator token, and writes nothing', async ({ request }) => {
  const mutations = apiRoutes().filter((r) => r.mutation);
  expect(mutations).toHaveLength(13);
  const before = snapshot();
  for (const route of mutations) {
    for (const headers of [
      { origin: 'http://evil.example' },
      { 'sec-fetch-site': 'cross-site' },
      { origin: 'null' },
    ] as Record<string, string>[]) {
      const response = await call(request, route.method, route.path, {
        body: route.body,
        headers: { ...OPERATOR, ...headers },
      });
      expect(response.status(), `${route.path} ${JSON.stringify(headers)}`).toBe(403);
      expect((await apiError(response)).message).toMatch(/^cross-site request refused/);
    }
  }
  expect(snapshot()).toEqual(before);
});

test('malformed JSON, wrong types and oversize bodies are 4xx naming the problem, and write nothing', async ({
  request,
}) => {
  const before = snapshot();
  const malformed = await call(request, 'POST', '/api/v1/runs', {
    headers: OPERATOR,
    body: '{"workflow": "agent-batch",\n "input": {"count": 3,}}',
  });
  expect(malformed.status()).toBe(400);
  expect(await apiError(malformed)).toMatchObject({ code: 'INVALID_JSON', line: 2, column: 23, position: 50 });

  const wrong = await call(request, 'POST', '/api/v1/checkpoint/claim', {
    headers: OPERATOR,
    body: { runId: 42, key: ['k'], leaseMs: 'soon', extra: 1 },
  });
  expect(wrong.status()).toBe(400);
  expect((await apiError(wrong)).fields).toEqual({
    runId: ['must be a string'],
    key: ['must be a string'],
    leaseMs: ['must be a number of milliseconds'],
    extra: ['is not a known field'],
  });

  const badInput = await call(request, 'POST', '/api/v1/runs', {
    headers: OPERATOR,
    body: { workflow: 'agent-batch', input: { count: -1, latencyMs: 'x' } },
  });
  expect(badInput.status()).toBe(400);
  expect(Object.keys((await apiError(badInput)).fields!).sort()).toEqual(['input.count', 'input.latencyMs']);

  const badQuery = await call(request, 'GET', '/api/v1/runs?limit=501&status=done', { headers: VIEWER });
  expect((await apiError(badQuery)).fields).toEqual({
    limit: ['must be at most 500'],
    status: ['must be one of queued, running, paused, waiting, completed, failed, cancelled, rejected, idle'],
  });

  const deep = await call(request, 'PUT', '/api/v1/checkpoint/e2e-deep/progress', {
    headers: OPERATOR,
    body: `{"step":1,"state":${'['.repeat(10_000)}${']'.repeat(10_000)}}`,
  });
  expect([deep.status(), (await apiError(deep)).code]).toEqual([400, 'INVALID_JSON']);

  // Just over 1 MiB, in each body that carries client data: input, result, state, a manual resolution.
  const huge = 'x'.repeat(1024 * 1024);
  const oversize: [string, string, unknown][] = [
    ['POST', '/api/v1/runs', { workflow: 'agent-batch', input: { note: huge } }],
    ['POST', '/api/v1/checkpoint/commit', { runId: 'e2e-big', key: 'e2e-big:0', token: 't', result: huge }],
    ['PUT', '/api/v1/checkpoint/e2e-big/progress', { step: 1, state: huge }],
    ['POST', '/api/v1/claims/resolve', { key: 'e2e-big:0', result: huge }],
  ];
  for (const [method, path, body] of oversize) {
    const response = await call(request, method, path, { headers: OPERATOR, body });
    expect(response.status(), path).toBe(413);
    expect(await apiError(response)).toEqual({
      code: 'PAYLOAD_TOO_LARGE',
      message: 'request body is larger than 1048576 bytes (WAYBILL_MAX_BODY_BYTES)',
      limit: 1048576,
    });
  }
  expect(snapshot()).toEqual(before);
});

test('unknown workflow, run, action, key or endpoint: a 4xx that names it', async ({ request }) => {
  const before = snapshot();
  const workflow = await call(request, 'POST', '/api/v1/runs', {
    headers: OPERATOR,
    body: { workflow: 'no-such-flow', input: {} },
  });
  expect(workflow.status()).toBe(400);
  expect((await apiError(workflow)).fields).toEqual({
    workflow: ['unknown workflow "no-such-flow" (known: agent-batch, notify, review-and-send)'],
  });

  for (const [method, path] of [
    ['GET', '/api/v1/runs/e2e-nobody'],
    ['GET', '/api/v1/runs/e2e-nobody/committed'],
    ['POST', '/api/v1/runs/e2e-nobody/cancel'],
  ]) {
    const response = await call(request, method!, path!, { headers: OPERATOR });
    expect([response.status(), await apiError(response)], path).toEqual([
      404,
      { code: 'NOT_FOUND', message: 'run e2e-nobody not found' },
    ]);
  }
  const action = await call(request, 'POST', '/api/v1/runs/e2e-nobody/explode', { headers: OPERATOR });
  expect([action.status(), (await apiError(action)).message]).toEqual([
    404,
    'no such run action "explode": one of pause, resume, cancel, retry',
  ]);

  const key = 'e2e-nobody:step:0';
  const expire = await call(request, 'POST', '/api/v1/claims/expire', { headers: OPERATOR, body: { key } });
  expect([expire.status(), (await apiError(expire)).message]).toEqual([404, `claim on ${key} not found`]);
  const resolve = await call(request, 'POST', '/api/v1/claims/resolve', {
    headers: OPERATOR,
    body: { key, result: 1 },
  });
  expect([resolve.status(), (await apiError(resolve)).message]).toEqual([404, `claim on ${key} not found`]);
  const renew = await call(request, 'POST', '/api/v1/checkpoint/renew', {
    headers: OPERATOR,
    body: { key, token: 'nope' },
  });
  expect([renew.status(), (await apiError(renew)).code]).toEqual([409, 'LEASE_LOST']);
  expect((await apiError(renew)).message).toContain(`lease lost on ${key}`);
  const progress = await call(request, 'GET', '/api/v1/checkpoint/e2e-nobody/progress', { headers: VIEWER });
  expect([progress.status(), (await apiError(progress)).message]).toEqual([
    404,
    'progress of run e2e-nobody not found',
  ]);
  const endpoint = await call(request, 'GET', '/api/v1/nothing/here', { headers: VIEWER });
  expect([endpoint.status(), (await apiError(endpoint)).code]).toEqual([404, 'NOT_FOUND']);
  const broken = await call(request, 'GET', '/api/v1/runs/%E0%A4%A', { headers: VIEWER });
  expect([broken.status(), (await apiError(broken)).code]).toEqual([400, 'INVALID_INPUT']);
  expect(snapshot()).toEqual(before);
});

test('runs: start, list with a cursor, inspect, pause / resume / cancel / retry — each audited once', async ({
  request,
}) => {
  const prefix = uniqueId('e2e-api-run');
  const auditBefore = countWhere('audit');
  const ids: string[] = [];
  for (let i = 0; i < 3; i++) {
    const started = await call(request, 'POST', '/api/v1/runs', {
      headers: OPERATOR,
      body: { workflow: 'agent-batch', input: { count: 4 }, id: `${prefix}-${i}` },
    });
    expect(started.status()).toBe(201);
    const { run } = await started.json();
    expect(run).toMatchObject({
      id: `${prefix}-${i}`,
      workflow: 'agent-batch',
      status: 'queued',
      totalSteps: 4,
      input: { count: 4 },
    });
    expect(started.headers().location).toBe(`/api/v1/runs/${prefix}-${i}`);
    ids.push(run.id);
  }
  // Started again as it was: the run it is, not an error (idempotent start); with another input: refused.
  const again = await call(request, 'POST', '/api/v1/runs', {
    headers: OPERATOR,
    body: { workflow: 'agent-batch', input: { count: 4 }, id: ids[0] },
  });
  expect(again.status()).toBe(200);
  expect(await again.json()).toMatchObject({ existed: true, run: { id: ids[0], status: 'queued' } });
  const differs = await call(request, 'POST', '/api/v1/runs', {
    headers: OPERATOR,
    body: { workflow: 'agent-batch', input: { count: 5 }, id: ids[0] },
  });
  expect([differs.status(), (await apiError(differs)).code]).toEqual([409, 'CONFLICT']);

  // Two pages of two and one, newest first, found by search.
  const seen: string[] = [];
  let cursor: string | null = null;
  let pages = 0;
  do {
    const page = await call(request, 'GET', `/api/v1/runs?q=${prefix}&limit=2${cursor ? `&cursor=${cursor}` : ''}`, {
      headers: VIEWER,
    });
    const body = (await page.json()) as { runs: { id: string }[]; nextCursor: string | null };
    seen.push(...body.runs.map((r) => r.id));
    cursor = body.nextCursor;
    pages++;
  } while (cursor);
  expect([pages, [...seen].sort()]).toEqual([2, [...ids].sort()]);

  const id = ids[0]!;
  const steps: [string, string][] = [
    ['pause', 'paused'],
    ['resume', 'queued'],
    ['cancel', 'cancelled'],
    ['retry', 'queued'],
    ['cancel', 'cancelled'],
  ];
  for (const [action, status] of steps) {
    const response = await call(request, 'POST', `/api/v1/runs/${id}/${action}`, { headers: OPERATOR });
    expect([response.status(), (await response.json()).run.status], action).toEqual([200, status]);
  }
  const refused = await call(request, 'POST', `/api/v1/runs/${id}/resume`, { headers: OPERATOR });
  expect([refused.status(), await apiError(refused)]).toEqual([
    409,
    { code: 'INVALID_TRANSITION', message: `cannot resume run ${id}: it is cancelled` },
  ]);

  const detail = await (await call(request, 'GET', `/api/v1/runs/${id}`, { headers: VIEWER })).json();
  expect(detail).toMatchObject({
    run: { id, status: 'cancelled', external: false },
    progress: null,
    counts: { committed: 0, claims: 0, orphanedClaims: 0 },
    actions: ['retry'],
  });

  // 3 starts + 5 actions; the refused resume and the refused duplicate start are not operator actions.
  expect(countWhere('audit') - auditBefore).toBe(8);
  expect(readAudit(id)).toEqual(['start', 'pause', 'resume', 'cancel', 'retry', 'cancel']);
  for (const other of ids.slice(1)) await call(request, 'POST', `/api/v1/runs/${other}/cancel`, { headers: OPERATOR });
});

/** The run's audit lines, oldest first: the action, and who when it was not the API's operator token. */
function readAudit(runId: string): string[] {
  return readSecured((db) =>
    (
      db.prepare('SELECT action, actor FROM audit WHERE run_id = ? ORDER BY id').all(runId) as {
        action: string;
        actor: string;
      }[]
    ).map((r) => (r.actor === 'operator token (api)' ? r.action : `${r.action} by ${r.actor}`)),
  );
}
