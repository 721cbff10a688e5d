/**
 * The guard in front of Next (lib/launch/http-guard.mjs), installed as each web process installs it, on a plain
 * node:http server spoken to over raw sockets: what Node's parser refuses before any listener (a URL past its
 * 16 KB, a method it does not know) is answered in the API's error shape under /api and /v1, as one line of
 * text for a page; and a body refused by its Content-Length under /api is told the API's limit,
 * WAYBILL_MAX_BODY_BYTES, not the guard's larger one. Next itself is not needed: what it would answer is never
 * reached.
 */
import http from 'node:http';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { install, refusal } from '../../lib/launch/http-guard.mjs';

const API_LIMIT = 1_048_576;
/** What web-cluster.ts computes from it: the larger of the server actions' 1.25 MB and a quarter above it. */
const GUARD_LIMIT = 1_310_720;
const GATEWAY_LIMIT = 32 * 1024 * 1024;
const ALLOW = 'GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS';

let server: http.Server;
let port: number;

beforeAll(async () => {
  install(GUARD_LIMIT, GATEWAY_LIMIT, API_LIMIT);
  server = http.createServer((_req, res) => res.end('reached the listener'));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as net.AddressInfo).port;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

interface Raw {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** Writes `chunks` on one connection, a pause between them (so each is a packet of its own), and reads the answer. */
function raw(chunks: string[]): Promise<Raw> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    let text = '';
    socket.setEncoding('latin1');
    socket.on('data', (d: string) => (text += d));
    socket.on('error', reject);
    socket.on('close', () => {
      const [head = '', body = ''] = text.split(/\r\n\r\n(.*)/s);
      const [statusLine = '', ...lines] = head.split('\r\n');
      resolve({
        status: Number(statusLine.split(' ')[1]),
        headers: Object.fromEntries(
          lines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]),
        ),
        body,
      });
    });
    socket.on('connect', async () => {
      for (const chunk of chunks) {
        socket.write(chunk);
        await new Promise((r) => setTimeout(r, 30));
      }
    });
  });
}

const LONG = 'x'.repeat(20_000);
const request = (method: string, target: string) =>
  `${method} ${target} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n`;

describe('the guard in front of Next', () => {
  it('answers a URL past 16 KB under /api with 431 in the API error shape, and a page with one line of text', async () => {
    const api = await raw([request('GET', `/api/v1/runs?q=${LONG}`)]);
    expect([api.status, api.headers['content-type']]).toEqual([431, 'application/json']);
    expect(JSON.parse(api.body)).toEqual({
      error: {
        code: 'HEADERS_TOO_LARGE',
        message: `the URL and headers together are larger than ${http.maxHeaderSize} bytes, more than this server reads`,
        limit: http.maxHeaderSize,
      },
    });
    expect((await raw([request('GET', `/v1/chat/completions?x=${LONG}`)])).headers['content-type']).toBe(
      'application/json',
    );
    const page = await raw([request('GET', `/runs?q=${LONG}`)]);
    expect([page.status, page.headers['content-type'], page.body]).toEqual([
      431,
      'text/plain; charset=utf-8',
      `431 the URL and headers together are larger than ${http.maxHeaderSize} bytes, more than this server reads\n`,
    ]);
  });

  it('answers in the API error shape when the request line came in an earlier packet and the path cannot be read', async () => {
    const split = await raw([`GET /runs?q=${LONG.slice(0, 8000)}`, `${LONG} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`]);
    expect([split.status, split.headers['content-type'], JSON.parse(split.body).error.code]).toEqual([
      431,
      'application/json',
      'HEADERS_TOO_LARGE',
    ]);
  });

  it('answers a method Node does not know with 405 and Allow: in the API error shape under /api, text on a page', async () => {
    const api = await raw([request('TRACK', '/api/v1/runs')]);
    expect([api.status, api.headers.allow, api.headers['content-type']]).toEqual([405, ALLOW, 'application/json']);
    expect(JSON.parse(api.body).error).toEqual({
      code: 'METHOD_NOT_ALLOWED',
      message: `method TRACK is not allowed: use one of ${ALLOW}`,
    });
    const page = await raw([request('BREW', '/runs/x')]);
    expect([page.status, page.headers.allow, page.body]).toEqual([
      405,
      ALLOW,
      `405 method BREW is not allowed: use one of ${ALLOW}\n`,
    ]);
    // A well-formed request still reaches the listener.
    expect((await raw([request('GET', '/api/v1/runs')])).body).toBe('reached the listener');
  });

  it('tells a body refused under /api the limit it must fit, WAYBILL_MAX_BODY_BYTES, not the guard’s own', async () => {
    const post = await raw([
      `POST /api/v1/runs HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 2000000\r\n\r\n{"a":1}`,
    ]);
    expect([post.status, JSON.parse(post.body)]).toEqual([
      413,
      {
        error: {
          code: 'PAYLOAD_TOO_LARGE',
          message: `request body is larger than ${API_LIMIT} bytes (WAYBILL_MAX_BODY_BYTES)`,
          limit: API_LIMIT,
        },
      },
    ]);
    // A page's form is held to the guard's limit, and told so without naming a setting that does not set it.
    expect(refusal('POST', '/runs', '2000000', GUARD_LIMIT, GATEWAY_LIMIT, API_LIMIT)).toMatchObject({
      status: 413,
      api: false,
      message: `request body is larger than ${GUARD_LIMIT} bytes, more than any request here may carry`,
      limit: GUARD_LIMIT,
    });
    // Not told the API's limit (an older primary): the guard's own, truthfully.
    expect(refusal('POST', '/api/v1/runs', '2000000', GUARD_LIMIT, GATEWAY_LIMIT)?.message).toBe(
      `request body is larger than ${GUARD_LIMIT} bytes, more than any request here may carry`,
    );
    // Between the two limits the route, which authorizes first, refuses by the same Content-Length.
    expect(refusal('POST', '/api/v1/runs', String(API_LIMIT + 1), GUARD_LIMIT, GATEWAY_LIMIT, API_LIMIT)).toBeNull();
  });
});
