/**
 * What the dashboard refuses before Next.js sees a request, preloaded into each web process
 * (`node --import lib/launch/http-guard.mjs next start`, see web-cluster.ts). Next answers each of these
 * with a 500 or never answers, before any of our code can run:
 *
 * - A method the fetch standard forbids (TRACE, TRACK) or one Next does not know (PROPFIND): building the
 *   Request throws, in the proxy and in the route handler alike; CONNECT is dropped unanswered. Here: 405
 *   with Allow. (A method Next knows but a route does not serve is the route's to answer: lib/api/methods.ts.)
 * - A path whose percent-encoding is broken (`/runs/%`, `/runs/%E0%A4%A`): the page router's param
 *   decoding throws. Here: 400.
 * - A body larger than anything we accept: refused by its Content-Length before a byte is read, and the
 *   connection closed once the client has read the answer (lingerOnClose), so a client that declares 2 MB and
 *   sends 7 bytes gets its answer at once and a flood of 9 MB posts costs no memory. A body sent without one
 *   (chunked) is counted as it arrives and refused the same way the moment it passes the limit: Next's own caps
 *   for an action's body are set at the most any WAYBILL_MAX_BODY_BYTES allows (next.config.js), so this is
 *   where the limit in force holds. Under /v1 (the model gateway, whose requests carry images) the limit is the
 *   gateway's own, larger one.
 * - What Node's parser refuses before any listener (a method it does not know, a URL and headers over its
 *   16 KB, a malformed request): Node's own answer is plain text; here it is in the API's shape where the
 *   request may be the API's (below, clientError).
 *
 * Under /api and /v1 every refusal is JSON in the API's error shape; elsewhere one line of text.
 *
 * Plain JavaScript and no imports of ours: it runs inside Next's own CLI process, where tsx is not loaded.
 * Its limits arrive in the environment, computed by the cluster's primary from lib/config and
 * lib/gateway/routes.ts: WAYBILL_GUARD_MAX_BODY_BYTES, the most any request may carry (WAYBILL_MAX_BODY_BYTES
 * plus a quarter, for the form around a value, and never less than 1.25 MiB); WAYBILL_GUARD_API_MAX_BODY_BYTES,
 * WAYBILL_MAX_BODY_BYTES itself, what an /api body may carry (lib/api/body.ts refuses past it), so that a body
 * refused here under /api is told that limit, the one it must fit; WAYBILL_GUARD_GATEWAY_MAX_BODY_BYTES, the
 * gateway's.
 */
import http from 'node:http';

export const ALLOWED_METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'];
const ALLOW = ALLOWED_METHODS.join(', ');

/** Whether a path's answers are the API's (JSON in its error shape): /api, and the gateway's /v1. */
function apiPath(path) {
  return path.startsWith('/api/') || path.startsWith('/v1/');
}

/**
 * The refusal for a request, or null to let Next handle it. `apiMaxBodyBytes`: WAYBILL_MAX_BODY_BYTES, named
 * in a refusal under /api when known (the threshold stays `maxBodyBytes`, so the route, which authorizes first,
 * refuses what lies between).
 */
export function refusal(
  method,
  url,
  contentLength,
  maxBodyBytes,
  gatewayMaxBodyBytes = maxBodyBytes,
  apiMaxBodyBytes = undefined,
) {
  const path = pathOf(url);
  // The gateway answers in the API's error shape, and so is refused in it.
  const api = apiPath(path);
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
  const limit = bodyLimit(path, maxBodyBytes, gatewayMaxBodyBytes);
  if (contentLength !== undefined && /^\d+$/.test(contentLength) && Number(contentLength) > limit)
    return tooLarge(path, limit, apiMaxBodyBytes);
  return null;
}

const pathOf = (url) => (url ?? '/').split('?')[0];

/** The most a request to `path` may carry: the gateway's larger limit under /v1, else the one for everything. */
function bodyLimit(path, maxBodyBytes, gatewayMaxBodyBytes) {
  return path.startsWith('/v1/') ? Math.max(maxBodyBytes, gatewayMaxBodyBytes) : maxBodyBytes;
}

/** The 413 for a body to `path` past `limit`, declared or counted. */
function tooLarge(path, limit, apiMaxBodyBytes) {
  const api = apiPath(path);
  // Under /api the limit a body must fit is WAYBILL_MAX_BODY_BYTES, and lib/api/body.ts's words for it.
  const [bytes, which] = path.startsWith('/v1/')
    ? [limit, ', more than a model request may carry']
    : api && apiMaxBodyBytes !== undefined && apiMaxBodyBytes <= limit
      ? [apiMaxBodyBytes, ' (WAYBILL_MAX_BODY_BYTES)']
      : [limit, ', more than any request here may carry'];
  return {
    status: 413,
    api,
    code: 'PAYLOAD_TOO_LARGE',
    message: `request body is larger than ${bytes} bytes${which}`,
    limit: bytes,
  };
}

/**
 * Holds a body that came without a Content-Length (chunked) to `limit`, counted as Node's parser hands it over
 * (IncomingMessage.push). A Content-Length needs no count: the parser reads no more than it declares, and
 * refusal() has judged it. Past the limit nothing more reaches Next: the 413 is sent, the connection closed, and
 * the request Next holds destroyed with it, so what it read so far ends as an aborted body, never as a shorter one
 * an action could take for whole. A response already begun (a route answering while the body still arrives)
 * cannot become a 413: the connection is cut.
 */
function countBody(req, res, limit, refuse) {
  const push = req.push;
  let bytes = 0;
  req.push = function counted(chunk, encoding) {
    if (chunk === null) return push.call(this, chunk, encoding);
    bytes += typeof chunk === 'string' ? Buffer.byteLength(chunk, encoding) : chunk.length;
    if (bytes <= limit) return push.call(this, chunk, encoding);
    // Dropped from here on, the end included; true keeps the parser reading while the connection lingers.
    req.push = () => true;
    if (res.headersSent) {
      req.socket.destroy();
      return true;
    }
    // As Node aborts a request whose client went away: every reader of the body (Next's proxy copy, the action)
    // ends on the error, so none holds the request in hand. Not before the socket closes: destroying the request
    // destroys its socket, and the 413 with it.
    req.socket.once('close', () => req.destroy(Object.assign(new Error('aborted'), { code: 'ECONNRESET' })));
    lingerOnClose(req.socket);
    send(res, refuse());
    return true;
  };
}

/** How long a connection refused a body goes on reading it, at most, for the client to read the 413 first. */
const LINGER_MS = 2000;

/**
 * Closes the connection of a refused body so that a client still sending it reads the 413: the answer and a FIN
 * go out, what the client sends meanwhile is read and dropped, and the socket is destroyed when the client closes
 * or LINGER_MS later. Destroyed at once with body bytes unread, the socket would send a reset, and the client's
 * system drops an answer its program has not read yet. Node calls destroySoon once the answer is written.
 */
function lingerOnClose(socket) {
  socket.destroySoon = function lingering() {
    this.end();
    setTimeout(() => this.destroy(), LINGER_MS).unref();
  };
}

function brokenEncoding(path) {
  try {
    for (const segment of path.split('/')) decodeURIComponent(segment);
    return false;
  } catch {
    return true;
  }
}

/** A refusal's body and headers: JSON in the API's error shape under /api and /v1, one line of text elsewhere. */
function answerOf(r) {
  const { status, api, headers = {}, code, message, ...more } = r;
  const body = api ? `${JSON.stringify({ error: { code, message, ...more } })}\n` : `${status} ${message}\n`;
  return {
    body,
    headers: {
      ...headers,
      'content-type': api ? 'application/json' : 'text/plain; charset=utf-8',
      'content-length': Buffer.byteLength(body),
      'cache-control': 'no-store',
      // The body, if any, is never read into anything: the connection cannot carry another request after it.
      connection: 'close',
    },
  };
}

/** Sends a refusal in the API's error shape under /api, as one line of text elsewhere; never reads the body. */
export function send(res, r) {
  const { body, headers } = answerOf(r);
  res.writeHead(r.status, headers);
  res.end(body);
}

/** A refusal as the raw HTTP/1.1 response written to a socket no request was made of (CONNECT, clientError). */
function rawResponse(r) {
  const { body, headers } = answerOf(r);
  const lines = Object.entries(headers).map(([name, value]) => `${name}: ${value}\r\n`);
  return `HTTP/1.1 ${r.status} ${http.STATUS_CODES[r.status]}\r\n${lines.join('')}\r\n${body}`;
}

/**
 * The method and path of the request Node's parser refused, read from the bytes it was parsing: the request
 * line when they hold it (after any earlier request of the same packet), else null. A URL or headers too
 * large for one packet leave only their last part there, and then whose the request was cannot be known.
 */
function requestLineOf(rawPacket, bytesParsed) {
  if (!rawPacket || rawPacket.length === 0) return null;
  const text = rawPacket.subarray(0, Math.min(rawPacket.length, 64 * 1024)).toString('latin1');
  const end = text.lastIndexOf(
    '\r\n\r\n',
    typeof bytesParsed === 'number' ? Math.max(0, bytesParsed - 4) : text.length,
  );
  const line = /^([A-Z][A-Z0-9_-]*) +(\/[^\s?]*|https?:\/\/[^\s/?]+(\/[^\s?]*)?)/.exec(
    end === -1 ? text : text.slice(end + 4),
  );
  if (!line) return null;
  const path = line[2].startsWith('/') ? line[2] : (line[3] ?? '/');
  return { method: line[1], path };
}

/**
 * What to answer a request Node's parser refused (its 'clientError'), by the error's code: a method Node does
 * not know 405 with Allow, a URL and headers past its limit 431, a request not received in time 408, any other
 * malformed request 400. In the API's shape when the request line says /api or /v1, or cannot be read (a
 * client of the API parses the answer, and a person reads JSON as well as text); one line of text for a page.
 */
function clientErrorRefusal(error, maxHeaderSize = http.maxHeaderSize) {
  const request = requestLineOf(error.rawPacket, error.bytesParsed);
  const api = request === null || apiPath(request.path);
  if (error.code === 'HPE_INVALID_METHOD') {
    return {
      status: 405,
      api,
      headers: { allow: ALLOW },
      code: 'METHOD_NOT_ALLOWED',
      message: `${request ? `method ${request.method}` : 'this method'} is not allowed: use one of ${ALLOW}`,
    };
  }
  if (error.code === 'HPE_HEADER_OVERFLOW')
    return {
      status: 431,
      api,
      code: 'HEADERS_TOO_LARGE',
      message: `the URL and headers together are larger than ${maxHeaderSize} bytes, more than this server reads`,
      limit: maxHeaderSize,
    };
  if (error.code === 'ERR_HTTP_REQUEST_TIMEOUT')
    return { status: 408, api, code: 'REQUEST_TIMEOUT', message: 'the request was not received in time' };
  return {
    status: 400,
    api,
    code: 'INVALID_INPUT',
    message: `malformed HTTP request: ${error.reason ?? error.code ?? 'it could not be parsed'}`,
  };
}

/** Wraps the request listener of the servers this process creates (Next's, the only one). */
export function install(maxBodyBytes, gatewayMaxBodyBytes = maxBodyBytes, apiMaxBodyBytes = undefined) {
  const createServer = http.createServer;
  http.createServer = function guardedCreateServer(...args) {
    const at = args.findIndex((a) => typeof a === 'function');
    if (at === -1) return createServer.apply(this, args);
    const listener = args[at];
    args[at] = function guarded(req, res) {
      const r = refusal(
        req.method ?? 'GET',
        req.url,
        req.headers['content-length'],
        maxBodyBytes,
        gatewayMaxBodyBytes,
        apiMaxBodyBytes,
      );
      // A request pipelined behind a refused body, on a connection told to close: not served.
      if (req.socket.writableEnded) return void req.socket.destroy();
      if (r !== null) {
        if (r.status === 413) lingerOnClose(req.socket);
        return send(res, r);
      }
      if (req.headers['transfer-encoding'] !== undefined) {
        const path = pathOf(req.url);
        const limit = bodyLimit(path, maxBodyBytes, gatewayMaxBodyBytes);
        countBody(req, res, limit, () => tooLarge(path, limit, apiMaxBodyBytes));
      }
      return listener.call(this, req, res);
    };
    const server = createServer.apply(this, args);
    // CONNECT never reaches a request listener: with no 'connect' listener Node drops the socket unanswered.
    server.on('connect', (req, socket) => {
      socket.on('error', () => {});
      socket.end(rawResponse(refusal('CONNECT', req.url, undefined, maxBodyBytes)));
    });
    // What Node's parser refuses never becomes a request: Node answers it in plain text itself, through this
    // event. Answered here as clientErrorRefusal says; a reset, or a socket already answering, is left alone.
    server.on('clientError', (error, socket) => {
      if (error.code === 'ECONNRESET' || !socket.writable || socket._httpMessage?.headersSent)
        return void socket.destroy();
      socket.end(rawResponse(clientErrorRefusal(error, server.maxHeaderSize ?? http.maxHeaderSize)));
    });
    return server;
  };
}

/** A byte count from the environment, or undefined when it is not one. */
function bytesFrom(name) {
  const n = Number(process.env[name]);
  return Number.isFinite(n) && n > 0 ? n : undefined;
}

const limit = bytesFrom('WAYBILL_GUARD_MAX_BODY_BYTES');
if (limit !== undefined)
  install(
    limit,
    bytesFrom('WAYBILL_GUARD_GATEWAY_MAX_BODY_BYTES') ?? limit,
    bytesFrom('WAYBILL_GUARD_API_MAX_BODY_BYTES'),
  );
