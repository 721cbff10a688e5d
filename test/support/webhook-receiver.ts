/**
 * A webhook receiver as a user would write one (node:http): it verifies each delivery's signature with the
 * exported helper before it reads the body, answers 400 to a bad one, and keeps every delivery it accepted by its
 * id, so a test counts what arrived, and how often. `answer` sets what it says meanwhile (503: down but
 * listening; 0: never answers, the request hangs, counted in `hung`); close() and listen() again on the same port:
 * not listening at all.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { verifyWebhook } from '../../lib/index';

export interface Received {
  id: string;
  event: string;
  body: { id: string; type: string; at: number; data: Record<string, unknown> };
}

export interface Receiver {
  url: string;
  /** Accepted deliveries, in arrival order (a delivery sent twice is here twice). */
  accepted: Received[];
  /** Distinct accepted ids. */
  ids(): Set<string>;
  /** Requests refused for a bad signature, and answered `answer` while not 200. */
  refused: number;
  answered: number;
  hung: string[];
  answer: number;
  listen(): Promise<void>;
  close(): Promise<void>;
}

export async function startReceiver(secret: () => string, options: { now?: () => number } = {}): Promise<Receiver> {
  let server: Server | null = null;
  let port = 0;
  const r: Receiver = {
    url: '',
    accepted: [],
    ids: () => new Set(r.accepted.map((a) => a.id)),
    refused: 0,
    answered: 0,
    hung: [],
    answer: 200,
    async listen() {
      server = createServer((req, res) => {
        const chunks: Buffer[] = [];
        req.on('data', (c: Buffer) => chunks.push(c));
        req.on('end', () => {
          if (r.answer === 0) {
            r.hung.push(String(req.headers['waybill-delivery']));
            return;
          }
          r.answered++;
          const body = Buffer.concat(chunks).toString('utf8');
          if (r.answer !== 200) {
            res.writeHead(r.answer).end();
            return;
          }
          const header = req.headers['waybill-signature'];
          if (!verifyWebhook(secret(), String(header ?? ''), body, { now: options.now?.() })) {
            r.refused++;
            res.writeHead(400).end('bad signature');
            return;
          }
          const parsed = JSON.parse(body) as Received['body'];
          r.accepted.push({
            id: String(req.headers['waybill-delivery']),
            event: String(req.headers['waybill-event']),
            body: parsed,
          });
          res.writeHead(200).end('ok');
        });
      });
      await new Promise<void>((resolve) => server!.listen(port, '127.0.0.1', resolve));
      port = (server!.address() as AddressInfo).port;
      r.url = `http://127.0.0.1:${port}/hook`;
    },
    async close() {
      const s = server;
      server = null;
      if (!s) return;
      s.closeAllConnections();
      await new Promise<void>((resolve) => s.close(() => resolve()));
    },
  };
  await r.listen();
  return r;
}
