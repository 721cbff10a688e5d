/**
 * A TCP gate in front of PostgreSQL that can be shut: cut() drops every open connection and refuses new ones
 * (the port stays bound, nothing listens behind it, as when the database host goes away); open() lets them
 * through again. The dashboard under test connects through it and never knows.
 */
import net from 'node:net';

export interface PgGate {
  /** The target URL with the gate's host and port. */
  url: string;
  cut(): void;
  open(): void;
  close(): Promise<void>;
}

export async function startPgGate(targetUrl: string): Promise<PgGate> {
  const target = new URL(targetUrl);
  let shut = false;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    if (shut) return void client.destroy();
    const upstream = net.connect(Number(target.port || 5432), target.hostname);
    sockets.add(client).add(upstream);
    client.pipe(upstream).pipe(client);
    const drop = () => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    client.on('close', drop).on('error', drop);
    upstream.on('close', drop).on('error', drop);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = new URL(targetUrl);
  url.hostname = '127.0.0.1';
  url.port = String((server.address() as net.AddressInfo).port);
  return {
    url: url.toString(),
    cut() {
      shut = true;
      for (const socket of sockets) socket.destroy();
      sockets.clear();
    },
    open() {
      shut = false;
    },
    close: () => new Promise<void>((resolve) => {
      for (const socket of sockets) socket.destroy();
      server.close(() => resolve());
    }),
  };
}
