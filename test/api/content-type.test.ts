/**
 * What a body may be sent as, over real HTTP against the route handlers on a real SQLite file: JSON
 * (`application/json`, `application/<name>+json`, any parameters, a charset only if it is UTF-8) or no Content-Type
 * at all. Anything else is 415 UNSUPPORTED_MEDIA_TYPE naming the header and what was sent, with nothing written,
 * on every route that takes a body: they all read it through lib/api/body.ts, and the OpenAPI document says so.
 */
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { z } from 'zod';
import { openApiDocument, ROUTES } from '../../lib/api/openapi';
import { serveApi } from '../support/route-server';
import { makeTempDir } from '../support/tmp';

const OPERATOR = 'content-type-operator-token-012345';
const VIEWER = 'content-type-viewer-token-0123456789';

/** A value each path parameter accepts: an enum's first, or the first of a few ids that passes. */
function sample(schema: z.ZodType): string {
  const options = (schema as { options?: unknown[] }).options;
  if (Array.isArray(options)) return String(options[0]);
  const value = ['r-1', '1', 'wh_1'].find((v) => schema.safeParse(v).success);
  if (value === undefined) throw new Error('no sample value for a path parameter');
  return value;
}

describe('a body sent as something other than JSON', () => {
  const dir = makeTempDir('waybill-api-content-type-');
  const file = dir.file('w.db');
  let server: { url: string; close(): Promise<void> };

  /** A request as a client sends it: the body as bytes, so that fetch adds no Content-Type of its own. */
  async function send(method: string, path: string, body: string, contentType: string | null) {
    const response = await fetch(server.url + path, {
      method,
      body: new TextEncoder().encode(body),
      headers: {
        authorization: `Bearer ${OPERATOR}`,
        ...(contentType === null ? {} : { 'content-type': contentType }),
      },
    });
    const text = await response.text();
    return { status: response.status, body: text ? JSON.parse(text) : null };
  }
  /** Every table's row count: what a refused request must leave as it was. */
  function counts(): Record<string, number> {
    const db = new Database(file, { readonly: true });
    try {
      const tables = db
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")
        .all() as { name: string }[];
      return Object.fromEntries(
        tables.map(({ name }) => [name, (db.prepare(`SELECT count(*) AS n FROM "${name}"`).get() as { n: number }).n]),
      );
    } finally {
      db.close();
    }
  }

  beforeAll(async () => {
    server = await serveApi(file, {
      operator: OPERATOR,
      viewer: VIEWER,
      sessionSecret: 'content-type-secret-0123456789',
    });
  });
  afterAll(async () => {
    await server?.close();
    dir.remove();
  });

  it('starts a run sent as JSON or with no Content-Type; refuses text/plain and latin1 with 415, writing nothing', async () => {
    const start = (id: string, contentType: string | null) =>
      send('POST', '/api/v1/runs', JSON.stringify({ workflow: 'agent-batch', input: { count: 1 }, id }), contentType);

    // A first run, so that the store and its tables exist before the refusals are counted against them.
    expect((await start('json', 'application/json')).status).toBe(201);
    const before = counts();
    const plain = await start('plain', 'text/plain');
    expect(plain).toEqual({
      status: 415,
      body: {
        error: {
          code: 'UNSUPPORTED_MEDIA_TYPE',
          message:
            'Content-Type "text/plain" is not JSON: send application/json (or application/<name>+json), or no Content-Type',
        },
      },
    });
    const latin1 = await start('latin1', 'application/json; charset=latin1');
    expect(latin1.status).toBe(415);
    expect(latin1.body.error).toEqual({
      code: 'UNSUPPORTED_MEDIA_TYPE',
      message:
        'Content-Type "application/json; charset=latin1" is not UTF-8, the one charset a JSON body has: send charset=utf-8, or no charset',
    });
    // curl -d without -H sends this one.
    expect((await start('form', 'application/x-www-form-urlencoded')).status).toBe(415);
    expect(counts()).toEqual(before);

    for (const [id, contentType] of [
      ['utf8', 'application/json; charset=utf-8'],
      ['vendor', 'application/vnd.x+json'],
      ['cased', 'Application/JSON; Charset="UTF-8"'],
      ['none', null],
    ] as const) {
      const answer = await start(id, contentType);
      expect([contentType, answer.status, answer.body.run?.id]).toEqual([contentType, 201, id]);
    }
  });

  it('is 415 on every route that takes a body, events and webhooks included, and the document lists it', async () => {
    const withBody = ROUTES.filter((route) => route.body);
    expect(withBody.map((r) => `${r.method} ${r.path}`)).toEqual(
      expect.arrayContaining(['post /api/v1/events', 'post /api/v1/webhooks', 'post /api/v1/checkpoint/commit']),
    );
    const before = counts();
    const answered: Record<string, number> = {};
    for (const route of withBody) {
      const path = route.path.replace(/\{(\w+)\}/g, (_, name: string) =>
        encodeURIComponent(sample(route.params![name]!)),
      );
      const answer = await send(route.method.toUpperCase(), path, '{}', 'text/plain;charset=UTF-8');
      answered[`${route.method} ${route.path}`] = answer.status;
      if (answer.status === 415) expect(answer.body.error.code).toBe('UNSUPPORTED_MEDIA_TYPE');
    }
    expect(answered).toEqual(Object.fromEntries(withBody.map((r) => [`${r.method} ${r.path}`, 415])));
    expect(counts()).toEqual(before);

    const paths = openApiDocument().paths as Record<string, Record<string, { responses: Record<string, unknown> }>>;
    for (const route of withBody) {
      expect(Object.keys(paths[route.path]![route.method]!.responses), `${route.method} ${route.path}`).toContain(
        '415',
      );
    }
  });

  it('reads a request with no body whatever its Content-Type says', async () => {
    const answer = await send('POST', '/api/v1/claims/sweep', '', 'text/plain');
    expect(answer).toMatchObject({ status: 200, body: { expired: 0 } });
  });
});
