/**
 * A TCP proxy in front of PostgreSQL that can lose an answer: armed with a marker (a prepared statement's
 * name, which travels in every Parse and Bind message), it lets the next request carrying the marker
 * reach the server, then cuts that connection when the server's answer arrives. The statement has run
 * and committed; the client sees only a dead connection. That is the outcome-unknown case a retry must
 * get right.
 */
import net from 'node:net';

export interface LossyProxy {
  url: string;
  /** Lose the answer to the next request that contains `marker`. */
  loseAnswerTo(marker: string): void;
  /** How many answers were lost so far. */
  readonly lost: number;
  close(): Promise<void>;
}

export async function startLossyProxy(targetUrl: string): Promise<LossyProxy> {
  const target = new URL(targetUrl);
  let marker: string | null = null;
  let lost = 0;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect(Number(target.port || 5432), target.hostname);
    sockets.add(client).add(upstream);
    let doomed = false;
    client.on('data', (chunk) => {
      if (marker !== null && chunk.includes(marker)) {
        marker = null;
        doomed = true;
      }
      upstream.write(chunk);
    });
    upstream.on('data', (chunk) => {
      if (!doomed) return void client.write(chunk);
      lost++;
      client.destroy();
      upstream.destroy();
    });
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
    loseAnswerTo(m) {
      marker = m;
    },
    get lost() {
      return lost;
    },
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
