/**
 * `waybill gateway`'s HTTP server: node:http in front of handler.ts. A client that goes away mid-answer
 * (its worker was killed) only stops being written to: the handler still reads the upstream to the end and
 * stores the answer, which is what the next attempt of the step is given.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import { flushTraces } from '../tracing';
import { type GatewayDeps, handleGatewayRequest } from './handler';

export interface GatewayServer {
  server: Server;
  /** `http://host:port`: the OpenAI SDK's baseURL is this plus `/v1`, the Anthropic SDK's this alone. */
  url: string;
  close(): Promise<void>;
}

export async function startGatewayServer(deps: GatewayDeps, host: string, port: number): Promise<GatewayServer> {
  const server = createServer((req, res) => {
    void serveNode(deps, req, res);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const shown = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return {
    server,
    url: `http://${shown}:${address.port}`,
    close: async () => {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      // The last calls' GenAI spans, before the process goes.
      await flushTraces().catch(() => undefined);
    },
  };
}

async function serveNode(deps: GatewayDeps, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const headers = new Headers();
  for (const [name, value] of Object.entries(req.headers)) {
    if (value === undefined) continue;
    headers.set(name, Array.isArray(value) ? value.join(', ') : value);
  }
  const hasBody = req.method !== 'GET' && req.method !== 'HEAD';
  const request = new Request(`http://${req.headers.host ?? 'gateway'}${req.url ?? '/'}`, {
    method: req.method,
    headers,
    body: hasBody ? (Readable.toWeb(req) as ReadableStream<Uint8Array>) : undefined,
    duplex: 'half',
  } as RequestInit);
  const response = await handleGatewayRequest(request, deps);
  res.writeHead(response.status, Object.fromEntries(response.headers));
  if (!response.body) {
    res.end();
    return;
  }
  const reader = response.body.getReader();
  res.on('close', () => {
    if (!res.writableFinished) void reader.cancel().catch(() => undefined);
  });
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      if (!res.destroyed) res.write(value);
    }
  } catch {
    // The answer was cut upstream (handler.ts stored nothing): the client sees its stream end early.
    res.destroy();
    return;
  }
  res.end();
}
