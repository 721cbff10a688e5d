/**
 * Random malformed requests for the API fuzz test, from a seeded PRNG so that a failure names its seed and
 * case number and replays exactly: WAYBILL_FUZZ_SEED=<seed> npx playwright test e2e/api-fuzz.spec.ts.
 */
import { readdirSync, readFileSync } from 'node:fs';
import net from 'node:net';
import { seededRandom } from '../../lib/random';
import { apiRoutes, OPERATOR, VIEWER } from './api';

/** The repository's one seeded generator (lib/random.ts): the same sequence on every machine for a seed. */
export const prng = seededRandom;

export interface FuzzCase {
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: Buffer;
  /** What was done to it, for the failure message. */
  what: string;
}

const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD', 'OPTIONS', 'PROPFIND', 'TRACE', 'TRACK'];
const WEIRD_IDS = [
  '',
  'a'.repeat(300),
  '..',
  '%2e%2e',
  '%',
  '%E0%A4%A',
  '%00',
  'a%00b',
  "x' OR 1=1 --",
  'run;DROP TABLE runs',
  '😀',
  'ﷺ‮',
  'a b',
  '%2F%2F',
  'r1/../../etc',
  '-',
  'A'.repeat(129),
  'ok-run-1',
  'a@b/c:d',
];
const WEIRD_VALUES: unknown[] = [
  null,
  true,
  false,
  0,
  -1,
  -0,
  1.5,
  2 ** 31,
  2 ** 53 + 1,
  1e308,
  'x',
  '',
  'é😀',
  '\u0000',
  '\ud800',
  'a'.repeat(5000),
  [],
  [1, [2, [3]]],
  {},
  { a: { b: null } },
];
const NUMBER_TEXT = [
  '1e400',
  '-1e400',
  '123456789012345678901234567890',
  '0.0000000000000000000001',
  '-0',
  '1E+999999',
];
const CONTENT_TYPES = [
  'application/json',
  'text/plain',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=x',
  'application/json; charset=latin1',
  '',
];
const QUERY_PARTS = [
  'limit=0',
  'limit=501',
  'limit=1e3',
  'limit=-5',
  'limit=abc',
  'limit=2',
  'cursor=%%%',
  'cursor=eyJ4IjoxfQ',
  'status=done',
  'status=queued',
  "q=' OR '1'='1",
  'q=%00',
  'q=😀',
  `q=${'z'.repeat(300)}`,
  'workflow=Agent',
  'workflow=agent-batch',
  'orphaned=yes',
  'orphaned=true',
  'runId=..',
  'limit=1&limit=2',
  'unknown=1',
  '&&&',
  '=x',
  'a[b]=c',
];

export function fuzzCases(seed: number, count: number): FuzzCase[] {
  const random = prng(seed);
  const int = (n: number) => Math.floor(random() * n);
  const pick = <T>(items: readonly T[]): T => items[int(items.length)]!;
  const routes = apiRoutes();
  const cases: FuzzCase[] = [];
  for (let i = 0; i < count; i++) {
    const notes: string[] = [];
    const route = pick(routes);
    let path = route.path;
    const roll = random();
    if (roll < 0.25) {
      const id = pick(WEIRD_IDS);
      path = path.replace('e2e-api-nobody', id);
      notes.push(`id ${JSON.stringify(id)}`);
    } else if (roll < 0.35) {
      path = `/api/v1/${Array.from({ length: 1 + int(5) }, () => pick([...WEIRD_IDS, 'runs', 'claims', 'checkpoint', 'progress', 'commit'])).join('/')}`;
      notes.push('random path');
    }
    if (random() < 0.3) {
      path = `${path.split('?')[0]}?${Array.from({ length: 1 + int(3) }, () => pick(QUERY_PARTS)).join('&')}`;
      notes.push('query');
    }
    const method = random() < 0.7 ? route.method : pick(METHODS);
    const headers: Record<string, string> = {};
    const who = int(6);
    if (who === 0) Object.assign(headers, OPERATOR);
    else if (who === 1) Object.assign(headers, VIEWER);
    else if (who === 2)
      headers.authorization = pick([
        'Bearer',
        'Bearer ',
        'Basic YTpi',
        `Bearer ${'x'.repeat(4000)}`,
        'bearer e2e-operator-token-0123456789abcdeX',
        'Bearer a b c',
      ]);
    else if (who === 3)
      headers.cookie = pick([
        'waybill_session=',
        'waybill_session=eyJyIjoib3BlcmF0b3IiLCJuIjoieCIsImUiOjk5OTk5OTk5OTl9.AAAA',
        'waybill_session=a.b.c',
        `waybill_session=${'y'.repeat(2000)}`,
      ]);
    else if (who === 4) Object.assign(headers, OPERATOR, { cookie: 'waybill_session=forged.value' });
    if (random() < 0.15) headers.origin = pick(['http://evil.example', 'null', 'http://127.0.0.1', 'file://']);
    if (random() < 0.1) headers['sec-fetch-site'] = pick(['cross-site', 'same-site', 'none', 'same-origin', 'garbage']);
    if (random() < 0.3) {
      const type = pick(CONTENT_TYPES);
      if (type) headers['content-type'] = type;
    }
    const body = fuzzBody(route.body, random, int, pick, notes);
    if (body !== undefined && !headers['content-type'] && random() < 0.7) headers['content-type'] = 'application/json';
    notes.push(`as ${who === 0 ? 'operator' : who === 1 ? 'viewer' : 'other'}`);
    cases.push({ method, path, headers, body, what: notes.join(', ') });
  }
  return cases;
}

function fuzzBody(
  template: unknown,
  random: () => number,
  int: (n: number) => number,
  pick: <T>(items: readonly T[]) => T,
  notes: string[],
): Buffer | undefined {
  const base = (template && typeof template === 'object' ? { ...(template as Record<string, unknown>) } : {}) as Record<
    string,
    unknown
  >;
  const fields = Object.keys(base);
  const kind = int(12);
  const text = (s: string) => Buffer.from(s, 'utf8');
  switch (kind) {
    case 0:
      notes.push('no body');
      return undefined;
    case 1:
      notes.push('valid body');
      return text(JSON.stringify(base));
    case 2: {
      const full = JSON.stringify(base);
      notes.push('truncated');
      return text(full.slice(0, int(full.length)));
    }
    case 3: {
      const field = fields.length ? pick(fields) : 'x';
      base[field] = pick(WEIRD_VALUES);
      notes.push(`wrong type in ${field}`);
      return text(JSON.stringify(base));
    }
    case 4: {
      const field = fields.length ? pick(fields) : 'step';
      notes.push(`huge number in ${field}`);
      return text(JSON.stringify(base).replace(/}$/, `${fields.length ? ',' : ''}"${field}":${pick(NUMBER_TEXT)}}`));
    }
    case 5: {
      const depth = 10 + int(3000);
      notes.push(`nested ${depth}`);
      return text(
        `{"state":${'['.repeat(depth)}${']'.repeat(depth)},"result":${'{"a":'.repeat(Math.min(depth, 200))}1${'}'.repeat(Math.min(depth, 200))}}`,
      );
    }
    case 6: {
      notes.push('unicode and NUL escapes');
      for (const f of fields) base[f] = pick(['\ud800', '\u0000', '😀‮x', 'é'.repeat(300)]);
      return text(JSON.stringify(base));
    }
    case 7: {
      notes.push('raw NUL and control bytes');
      const s = JSON.stringify(base);
      const at = int(s.length);
      return Buffer.concat([text(s.slice(0, at)), Buffer.from([0, 1, 0x1b]), text(s.slice(at))]);
    }
    case 8: {
      notes.push('random bytes');
      return Buffer.from(Array.from({ length: int(200) }, () => int(256)));
    }
    case 9: {
      const root = pick(['[]', 'null', '"str"', '42', 'true', '[{}]', '{}']);
      notes.push(`root ${root}`);
      return text(root);
    }
    case 10: {
      notes.push('unknown fields');
      return text(
        JSON.stringify({ ...base, ['__proto__']: { admin: true }, constructor: 1, extra: pick(WEIRD_VALUES) }),
      );
    }
    default: {
      if (random() < 0.15) {
        notes.push('oversize');
        return Buffer.alloc(1024 * 1024 + 1 + int(1000), 0x61);
      }
      notes.push('big string');
      return text(JSON.stringify({ ...base, note: 'n'.repeat(int(200_000)) }));
    }
  }
}

/**
 * Methods Next.js cannot build a Request for (fetch forbids TRACE), that never reach a request listener
 * (CONNECT; TRACK and BREW, which Node's parser does not know), or that Next does not serve (PROPFIND, MKCOL).
 */
export const UNKNOWN_METHODS = ['TRACE', 'TRACK', 'CONNECT', 'PROPFIND', 'MKCOL', 'BREW'];
/** Those Node's parser refuses before any listener: answered as plain text, not in the API's shape. */
export const UNPARSED_METHODS = ['TRACK', 'BREW', 'CONNECT'];

/** Paths whose percent-encoding is broken, outside /api/v1 and in it. */
export const BROKEN_PATHS = [
  '/runs/%',
  '/runs/%E0%A4%A',
  '/runs/%C0%AF',
  '/claims/%zz',
  '/%',
  '/runs/a%2',
  '/api/v1/runs/%',
  '/api/v1/runs/%E0%A4%A/cancel',
  '/api/metrics/%FF',
];

export interface RawAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/**
 * One request written byte for byte on a socket: a method or a path no HTTP client would send, a
 * Content-Length that lies, a body that stops short. Resolves with the answer as soon as it is complete,
 * whether or not the server read what was sent; rejects with "no answer" after `timeoutMs`.
 */
export function rawRequest(
  port: number,
  head: string,
  body: Buffer = Buffer.alloc(0),
  timeoutMs = 20_000,
): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    let data = Buffer.alloc(0);
    let settled = false;
    const finish = (outcome: RawAnswer | Error) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      if (outcome instanceof Error) reject(outcome);
      else resolve(outcome);
    };
    const timer = setTimeout(
      () => finish(new Error(`no answer within ${timeoutMs} ms to ${head.split('\r\n')[0]}`)),
      timeoutMs,
    );
    const parse = (complete: boolean) => {
      const end = data.indexOf('\r\n\r\n');
      if (end === -1)
        return complete
          ? finish(new Error(`connection closed without an answer to ${head.split('\r\n')[0]}`))
          : undefined;
      const [statusLine, ...lines] = data.subarray(0, end).toString('latin1').split('\r\n');
      const headers = Object.fromEntries(
        lines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]),
      );
      const rest = data.subarray(end + 4);
      const length = headers['content-length'] === undefined ? null : Number(headers['content-length']);
      if (length !== null ? rest.length >= length : complete) {
        finish({
          status: Number(statusLine!.split(' ')[1]),
          headers,
          body: rest.subarray(0, length ?? rest.length).toString('utf8'),
        });
      }
    };
    socket.on('data', (chunk: Buffer) => {
      data = Buffer.concat([data, chunk]);
      parse(false);
    });
    // The server may close as soon as it has answered, while we are still writing: the answer is what counts.
    socket.on('error', () => parse(true));
    socket.on('close', () => parse(true));
    socket.write(head);
    if (body.length > 0) socket.write(body, () => undefined);
  });
}

/** Resident memory of the secured server's web processes (next start under the cluster), in bytes, from /proc. */
export function webServerRss(port: number): number {
  let total = 0;
  for (const pid of readdirSync('/proc').filter((p) => /^\d+$/.test(p))) {
    try {
      const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
      // Next sets its process title, which replaces the command line.
      if (!cmdline.startsWith('next-server')) continue;
      if (!readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0').includes(`PORT=${port}`)) continue;
      const kb = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
      total += Number(kb ?? 0) * 1024;
    } catch {
      // gone, or not ours to read
    }
  }
  return total;
}
