/** The commands of docs/gateway.md, run as its reader would: see ./page.ts and ./here.ts. */
import { createServer } from 'node:net';
import { runPage } from './page';

const port = await new Promise<number>((resolve) => {
  const server = createServer().listen(0, '127.0.0.1', () => {
    const { port } = server.address() as { port: number };
    server.close(() => resolve(port));
  });
});
await runPage('docs/gateway.md', { WAYBILL_GATEWAY_PORT: String(port) });
