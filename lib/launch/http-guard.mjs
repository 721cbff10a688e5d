/**
 * What the dashboard refuses before Next.js sees a request, preloaded into each web process
 * (`node --import lib/launch/http-guard.mjs next start`, see web-cluster.ts). Next answers each of these
 * with a 500 or never answers, before any of our code can run:
 *
 * - A method the fetch standard forbids (TRACE, TRACK) or one Next does not know (PROPFIND): building the
 *   Request throws, in the proxy and in the route handler alike; CONNECT is dropped unanswered. Here: 405
 *   with Allow.
 * - A path whose percent-encoding is broken (`/runs/%`, `/runs/%E0%A4%A`): the page router's param
 *   decoding throws. Here: 400.
 * - A declared body larger than anything we accept: refused by its Content-Length before a byte is read,
 *   and the connection closed, so a client that declares 2 MB and sends 7 bytes gets its answer at once
 *   and a flood of 9 MB posts costs no memory. Under /v1 (the model gateway, whose requests carry images)
 *   the limit is the gateway's own, larger one.
 *
 * Plain JavaScript and no imports of ours: it runs inside Next's own CLI process, where tsx is not loaded.
 * Its limits arrive in WAYBILL_GUARD_MAX_BODY_BYTES and WAYBILL_GUARD_GATEWAY_MAX_BODY_BYTES, computed from
 * lib/config and lib/gateway/routes.ts by the cluster's primary.
 */
import http from 'node:http';

export const ALLOWED_METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'];
const ALLOW = ALLOWED_METHODS.join(', ');

/** The refusal for a request, or null to let Next handle it. */
export function refusal(method, url, contentLength, maxBodyBytes, gatewayMaxBodyBytes = maxBodyBytes) {
  const path = (url ?? '/').split('?')[0];
  const gateway = path.startsWith('/v1/');
  // The gateway answers in the API's error shape, and so is refused in it.
  const api = path.startsWith('/api/') || gateway;
  const limit = gateway ? Math.max(maxBodyBytes, gatewayMaxBodyBytes) : maxBodyBytes;
  if (!ALLOWED_METHODS.includes(method)) {
    return {
      status: 405,
      api,
      headers: { allow: ALLOW },
      code: 'METHOD_NOT_ALLOWED',
      message: `method ${method} is not allowed: use one of ${ALLOW}`,
    };
  }
  if (brokenEncoding(path)) {
    return {
      status: 400,
      api,
      code: 'INVALID_INPUT',
      message: 'invalid path: broken percent-encoding',
      fields: { path: ['is not valid percent-encoding'] },
    };
  }
  if (contentLength !== undefined && /^\d+$/.test(contentLength) && Number(contentLength) > limit) {
    return {
      status: 413,
      api,
      code: 'PAYLOAD_TOO_LARGE',
      message: gateway
        ? `request body is larger than ${limit} bytes, more than a model request may carry`
        : `request body is larger than ${limit} bytes, more than any request may carry (WAYBILL_MAX_BODY_BYTES sets the limit)`,
      limit,
    };
  }
  return null;
}

function brokenEncoding(path) {
  try {
    for (const segment of path.split('/')) decodeURIComponent(segment);
    return false;
  } catch {
    return true;
  }
}

/** Sends a refusal in the API's error shape under /api, as one line of text elsewhere; never reads the body. */
export function send(res, r) {
  const { status, api, headers = {}, code, message, ...more } = r;
  const body = api ? `${JSON.stringify({ error: { code, message, ...more } })}\n` : `${status} ${message}\n`;
  res.writeHead(status, {
    ...headers,
    'content-type': api ? 'application/json' : 'text/plain; charset=utf-8',
    'content-length': Buffer.byteLength(body),
    'cache-control': 'no-store',
    // The body, if any, is left unread: the connection cannot carry another request after it.
    connection: 'close',
  });
  res.end(body);
}

/** Wraps the request listener of the servers this process creates (Next's, the only one). */
export function install(maxBodyBytes, gatewayMaxBodyBytes = maxBodyBytes) {
  const createServer = http.createServer;
  http.createServer = function guardedCreateServer(...args) {
    const at = args.findIndex((a) => typeof a === 'function');
    if (at === -1) return createServer.apply(this, args);
    const listener = args[at];
    args[at] = function guarded(req, res) {
      const r = refusal(req.method ?? 'GET', req.url, req.headers['content-length'], maxBodyBytes, gatewayMaxBodyBytes);
      if (r === null) return listener.call(this, req, res);
      send(res, r);
    };
    const server = createServer.apply(this, args);
    // CONNECT never reaches a request listener: with no 'connect' listener Node drops the socket unanswered.
    server.on('connect', (req, socket) => {
      const r = refusal('CONNECT', req.url, undefined, maxBodyBytes);
      const body = `${r.status} ${r.message}\n`;
      socket.on('error', () => {});
      socket.end(
        `HTTP/1.1 405 Method Not Allowed\r\nAllow: ${ALLOW}\r\nContent-Type: text/plain; charset=utf-8\r\n` +
          `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
      );
    });
    // A method Node's parser does not know (TRACK, BREW) never becomes a request: Node answers 400 itself,
    // through this event. Named for what it is, a 405; every other parse error keeps Node's own answer.
    server.on('clientError', (error, socket) => {
      if (error.code === 'ECONNRESET' || !socket.writable) return void socket.destroy();
      const status =
        error.code === 'HPE_INVALID_METHOD'
          ? 405
          : error.code === 'HPE_HEADER_OVERFLOW'
            ? 431
            : error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
              ? 408
              : 400;
      const text = `${status} ${http.STATUS_CODES[status]}\n`;
      socket.end(
        `HTTP/1.1 ${status} ${http.STATUS_CODES[status]}\r\n${status === 405 ? `Allow: ${ALLOW}\r\n` : ''}` +
          `Content-Type: text/plain; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(text)}\r\nConnection: close\r\n\r\n${text}`,
      );
    });
    return server;
  };
}

const limit = Number(process.env.WAYBILL_GUARD_MAX_BODY_BYTES);
const gatewayLimit = Number(process.env.WAYBILL_GUARD_GATEWAY_MAX_BODY_BYTES);
if (Number.isFinite(limit) && limit > 0)
  install(limit, Number.isFinite(gatewayLimit) && gatewayLimit > 0 ? gatewayLimit : limit);
