/**
 * The HTTP API suites' world: the secured server (both role tokens, its own SQLite file), every API route
 * with a body that would be valid, and a read-only look at the database to prove a refused request
 * wrote nothing: each table's row count and a checksum of its rows.
 */
import { createHash } from 'node:crypto';
import type { APIRequestContext, APIResponse } from '@playwright/test';
import Database from 'better-sqlite3';
import { E2E_OPERATOR_TOKEN, E2E_VIEWER_TOKEN } from './prepare';

export const SECURED = `http://127.0.0.1:${Number(process.env.WAYBILL_E2E_PORT ?? 3210) + 1}`;
export const OPERATOR = { authorization: `Bearer ${E2E_OPERATOR_TOKEN}` };
export const VIEWER = { authorization: `Bearer ${E2E_VIEWER_TOKEN}` };

export function securedDbPath(): string {
  const url = process.env.WAYBILL_E2E_SECURED_DATABASE_URL;
  if (!url) throw new Error('WAYBILL_E2E_SECURED_DATABASE_URL is not set: run the suite through playwright.config.ts');
  return url.slice('file:'.length);
}

/** Reads the secured database read-only, as an outside observer. */
export function readSecured<T>(fn: (db: Database.Database) => T): T {
  const db = new Database(securedDbPath(), { readonly: true, fileMustExist: true });
  try {
    return fn(db);
  } finally {
    db.close();
  }
}

export const countWhere = (sql: string, ...args: unknown[]): number =>
  readSecured((db) => (db.prepare(`SELECT count(*) AS n FROM ${sql}`).get(...args) as { n: number }).n);

/** Every table's row count and a sha-256 over its rows in a fixed order: equal snapshots, nothing written. */
export function snapshot(): Record<string, { rows: number; sum: string }> {
  return readSecured((db) => {
    const tables = (
      db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").all() as { name: string }[]
    ).map((t) => t.name);
    const out: Record<string, { rows: number; sum: string }> = {};
    for (const table of tables) {
      const rows = db
        .prepare(`SELECT * FROM "${table}"`)
        .raw()
        .all()
        .map((r) => JSON.stringify(r))
        .sort();
      out[table] = { rows: rows.length, sum: createHash('sha256').update(rows.join('\n')).digest('hex') };
    }
    return out;
  });
}

export interface Route {
  method: 'GET' | 'POST' | 'PUT';
  path: string;
  /** A body the route would accept from an operator (mutations only). */
  body?: unknown;
  mutation: boolean;
}

/** Every /api/v1 route, with ids and keys that exist nowhere: a refusal must come before any lookup. */
export function apiRoutes(): Route[] {
  const run = 'e2e-api-nobody';
  return [
    { method: 'GET', path: '/api/v1/runs?limit=5', mutation: false },
    { method: 'POST', path: '/api/v1/runs', body: { workflow: 'agent-batch', input: { count: 1 } }, mutation: true },
    { method: 'GET', path: `/api/v1/runs/${run}`, mutation: false },
    ...(['pause', 'resume', 'cancel', 'retry'] as const).map(
      (a): Route => ({ method: 'POST', path: `/api/v1/runs/${run}/${a}`, body: {}, mutation: true }),
    ),
    { method: 'GET', path: `/api/v1/runs/${run}/committed`, mutation: false },
    { method: 'GET', path: '/api/v1/claims?orphaned=true', mutation: false },
    { method: 'POST', path: '/api/v1/claims/expire', body: { key: `${run}:step:0`, force: true }, mutation: true },
    {
      method: 'POST',
      path: '/api/v1/claims/resolve',
      body: { key: `${run}:step:0`, result: { ok: true }, force: true },
      mutation: true,
    },
    { method: 'POST', path: '/api/v1/claims/sweep', body: {}, mutation: true },
    { method: 'GET', path: `/api/v1/checkpoint/${run}/progress`, mutation: false },
    { method: 'PUT', path: `/api/v1/checkpoint/${run}/progress`, body: { step: 1, state: {} }, mutation: true },
    { method: 'POST', path: '/api/v1/checkpoint/claim', body: { runId: run, key: `${run}:step:0` }, mutation: true },
    { method: 'POST', path: '/api/v1/checkpoint/renew', body: { key: `${run}:step:0`, token: 'x' }, mutation: true },
    {
      method: 'POST',
      path: '/api/v1/checkpoint/commit',
      body: { runId: run, key: `${run}:step:0`, token: 'x', result: 1 },
      mutation: true,
    },
    {
      method: 'POST',
      path: '/api/v1/checkpoint/release',
      body: { key: `${run}:step:0`, token: 'x', error: 'e' },
      mutation: true,
    },
  ];
}

/** One call to the secured server; `body` is sent as JSON unless it is already a string or Buffer. */
export async function call(
  request: APIRequestContext,
  method: string,
  path: string,
  options: { headers?: Record<string, string>; body?: unknown } = {},
): Promise<APIResponse> {
  // Always bytes: Playwright JSON-encodes a string `data` sent as application/json, which would hide malformed JSON.
  const raw =
    options.body === undefined
      ? undefined
      : Buffer.isBuffer(options.body)
        ? options.body
        : Buffer.from(typeof options.body === 'string' ? options.body : JSON.stringify(options.body), 'utf8');
  return request.fetch(`${SECURED}${path}`, {
    method,
    headers: { ...(raw !== undefined ? { 'content-type': 'application/json' } : {}), ...options.headers },
    data: raw,
    failOnStatusCode: false,
    maxRedirects: 0,
  });
}

/** The API's error, checked for its shape. */
export async function apiError(
  response: APIResponse,
): Promise<{ code: string; message: string; fields?: Record<string, string[]>; [k: string]: unknown }> {
  const body = (await response.json()) as { error: { code: string; message: string } };
  if (typeof body?.error?.code !== 'string' || typeof body.error.message !== 'string')
    throw new Error(`not an API error: ${JSON.stringify(body)}`);
  return body.error;
}
