/**
 * The guard in front of Next (lib/launch/http-guard.mjs), installed as each web process installs it, on a plain
 * node:http server spoken to over raw sockets: what Node's parser refuses before any listener (a URL past its
 * 16 KB, a method it does not know) is answered in the API's error shape under /api and /v1, as one line of
 * text for a page; a body refused by its Content-Length under /api is told the API's limit,
 * WAYBILL_MAX_BODY_BYTES, not the guard's larger one; and a chunked body, which declares no length, is counted
 * and refused the moment it passes the limit, the listener left with an aborted request, never a shorter body.
 * Next itself is not needed: what it would answer is never reached (e2e/body-limit.spec.ts serves the real
 * dashboard).
 */
import http from 'node:http';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { install, refusal } from '../../lib/launch/http-guard.mjs';

const API_LIMIT = 1_048_576;
/** What web-cluster.ts computes from it: the larger of the server actions' 1.25 MB and a quarter above it. */
const GUARD_LIMIT = 1_310_720;
const GATEWAY_LIMIT = 32 * 1024 * 1024;
const ALLOW = 'GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS';

let server: http.Server;
let port: number;
/** A listener that reads each body to its end, as an action does, and what it was left with. */
let reader: http.Server;
let readerPort: number;
const read: { bytes: number; ended: boolean; aborted: boolean }[] = [];

beforeAll(async () => {
  install(GUARD_LIMIT, GATEWAY_LIMIT, API_LIMIT);
  server = http.createServer((_req, res) => res.end('reached the listener'));
  reader = http.createServer((req, res) => {
    const seen = { bytes: 0, ended: false, aborted: false };
    read.push(seen);
    req.on('data', (chunk: Buffer) => (seen.bytes += chunk.length));
    req.on('end', () => {
      seen.ended = true;
      res.end(`read ${seen.bytes} bytes`);
    });
    req.on('close', () => (seen.aborted = !seen.ended));
  });
  for (const s of [server, reader]) await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
  port = (server.address() as net.AddressInfo).port;
  readerPort = (reader.address() as net.AddressInfo).port;
});
afterAll(async () => {
  for (const s of [server, reader]) {
    s.closeAllConnections();
    await new Promise((resolve) => s.close(resolve));
  }
});

interface Raw {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** The status line, headers and body of an HTTP/1.1 answer as read off the socket. */
function parsed(text: string): Raw {
  const [head = '', body = ''] = text.split(/\r\n\r\n(.*)/s);
  const [statusLine = '', ...lines] = head.split('\r\n');
  return {
    status: Number(statusLine.split(' ')[1]),
    headers: Object.fromEntries(
      lines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]),
    ),
    body,
  };
}

/**
 * Writes `chunks` on one connection, a pause between them (so each is a packet of its own), then closes its side,
 * as a client done sending does, and reads the answer.
 */
function raw(chunks: string[]): Promise<Raw> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    let text = '';
    socket.setEncoding('latin1');
    socket.on('data', (d: string) => (text += d));
    socket.on('error', reject);
    socket.on('close', () => resolve(parsed(text)));
    socket.on('connect', async () => {
      for (const chunk of chunks) {
        socket.write(chunk);
        await new Promise((r) => setTimeout(r, 30));
      }
      socket.end();
    });
  });
}

/**
 * POSTs `total` bytes to `path` chunked (no Content-Length), 64 KiB a chunk, each written once the last has
 * drained, until all is sent or the server answers; then closes its side, as a client told to stop does.
 * `naive`: a client that reads only once it has sent everything, and `behind` too (another request after it).
 * `unended`: the body's last chunk is never sent, so an answer to it was given on what the server counted.
 * `sent`: the body bytes written by then.
 */
function chunked(
  path: string,
  total: number,
  { naive = false, behind = '', unended = false }: { naive?: boolean; behind?: string; unended?: boolean } = {},
): Promise<Raw & { sent: number }> {
  return new Promise((resolve) => {
    const socket = net.connect(readerPort, '127.0.0.1');
    let text = '';
    let sent = 0;
    socket.setEncoding('latin1');
    socket.on('data', (d: string) => (text += d));
    // Writes the server no longer reads may end in a reset once it closes: the answer is what counts.
    socket.on('error', () => {});
    socket.on('close', () => resolve({ ...parsed(text), sent }));
    socket.on('connect', async () => {
      socket.write(`POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\n`);
      const piece = 'y'.repeat(64 * 1024);
      while (sent < total && (naive || text === '') && !socket.destroyed) {
        const size = Math.min(piece.length, total - sent);
        const drained = socket.write(`${size.toString(16)}\r\n${piece.slice(0, size)}\r\n`);
        sent += size;
        if (!drained) await new Promise((r) => socket.once('drain', r).once('data', r).once('close', r));
      }
      if (socket.destroyed) return;
      if (unended && text === '') await new Promise((r) => socket.once('data', r).once('close', r));
      if (!unended && (text === '' || naive)) socket.end(`0\r\n\r\n${behind}`);
      else socket.end();
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

  it('counts a chunked body, which declares no length, and refuses it once past the limit: 413, closed, the listener aborted', async () => {
    read.length = 0;
    const over = await chunked('/claims', 2 * GUARD_LIMIT, { unended: true });
    expect([over.status, over.headers.connection, over.body]).toEqual([
      413,
      'close',
      `413 request body is larger than ${GUARD_LIMIT} bytes, more than any request here may carry\n`,
    ]);
    // Answered at the limit, the body never ended: past it nothing reached the listener.
    await vi.waitFor(() => expect(read).toEqual([{ bytes: expect.any(Number), ended: false, aborted: true }]));
    expect(read[0]!.bytes).toBeLessThanOrEqual(GUARD_LIMIT);

    // Under /api, in the API's shape, naming the limit a body must fit.
    const api = await chunked('/api/v1/runs', 2 * GUARD_LIMIT, { unended: true });
    expect([api.status, JSON.parse(api.body)]).toEqual([
      413,
      {
        error: {
          code: 'PAYLOAD_TOO_LARGE',
          message: `request body is larger than ${API_LIMIT} bytes (WAYBILL_MAX_BODY_BYTES)`,
          limit: API_LIMIT,
        },
      },
    ]);
  });

  it('lets a chunked body up to the limit through whole, and one to the gateway up to its own', async () => {
    read.length = 0;
    const whole = await chunked('/claims', GUARD_LIMIT);
    expect([whole.status, whole.body]).toEqual([200, `read ${GUARD_LIMIT} bytes`]);
    const model = await chunked('/v1/chat/completions', 2 * GUARD_LIMIT);
    expect([model.status, model.body]).toEqual([200, `read ${2 * GUARD_LIMIT} bytes`]);
    expect(read.map((r) => [r.bytes, r.ended])).toEqual([
      [GUARD_LIMIT, true],
      [2 * GUARD_LIMIT, true],
    ]);
  });

  it('lingers after the refusal so a client that sends everything before reading still reads the 413; nothing behind it is served', async () => {
    read.length = 0;
    // Twice the limit: the client writes the rest of it within the guard's linger (2 s), as a client does.
    const naive = await chunked('/claims', 2 * GUARD_LIMIT, {
      naive: true,
      behind: 'GET /behind HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n',
    });
    expect([naive.status, naive.sent]).toEqual([413, 2 * GUARD_LIMIT]);
    await vi.waitFor(() => expect(read.map((r) => [r.ended, r.aborted])).toEqual([[false, true]]));
  });
});
