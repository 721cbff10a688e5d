/**
 * `waybill worker --health-port`: a port of the worker's own, for Kubernetes' probes and a Prometheus scrape
 * of the pod. Reads only; it names no secret and changes nothing.
 *
 *   GET /livez    200 while the process answers at all: a liveness probe (a failing one restarts the pod).
 *   GET /readyz   200 when the worker can do its work: not draining, the store answers a cheap read within
 *                 PROBE_TIMEOUT_MS, and its last heartbeat reached the store within STALE_BEATS beats; else
 *                 503. Each with a small JSON body saying which check failed.
 *   GET /healthz  the same as /readyz: "is it healthy" is whether it can work, and what `curl` is pointed at.
 *   GET /metrics  the worker's own metrics (metrics.ts), Prometheus text format.
 *
 * A liveness probe must be /livez: a store outage makes every worker unready at once, and a restart would
 * not bring the store back (docs/operations.md has the probe config).
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type Clock, systemClock } from '../../clock';
import type { StepStore } from '../../store/contract';
import type { Worker } from './loop';
import { METRICS_CONTENT_TYPE } from './metrics';

/** How long the store has to answer the readiness read: a probe's own timeout is 1 s by default, and retried. */
export const PROBE_TIMEOUT_MS = 2000;
/**
 * Beats a heartbeat may be late before the worker is not ready: one late beat is a slow store, three mean its
 * beats stopped landing, and its run leases (renewed at the same cadence) are running out.
 */
export const STALE_BEATS = 3;

export interface Readiness {
  ready: boolean;
  workerId: string;
  checks: {
    draining: boolean;
    store: { ok: true } | { ok: false; error: string };
    heartbeat: { ok: boolean; ageMs: number | null; limitMs: number };
  };
}

export interface HealthServer {
  /** `http://host:port`. */
  url: string;
  close(): Promise<void>;
}

export interface HealthOptions {
  /** The worker's store: the readiness read is a progress lookup of a run that does not exist. */
  store: Pick<StepStore, 'loadProgress'>;
  /** The worker's clock (heartbeat ages are measured on it); the system clock by default. */
  clock?: Clock;
  probeTimeoutMs?: number;
}

/** Whether the worker can do its work now (the /readyz answer). */
export class ReadinessCheck {
  /** One read at a time: a store that hangs is not asked again by every probe until it answers. */
  private reading: Promise<void> | null = null;
  private readonly clock: Clock;
  private readonly timeoutMs: number;

  constructor(
    private readonly worker: Worker,
    private readonly options: HealthOptions,
  ) {
    this.clock = options.clock ?? systemClock;
    this.timeoutMs = options.probeTimeoutMs ?? PROBE_TIMEOUT_MS;
  }

  async check(): Promise<Readiness> {
    const store = await this.storeAnswers();
    const { lastAt, everyMs } = this.worker.heartbeat;
    const limitMs = STALE_BEATS * everyMs;
    const ageMs = lastAt === null ? null : Math.max(0, this.clock.now() - lastAt);
    const heartbeat = { ok: ageMs !== null && ageMs <= limitMs, ageMs, limitMs };
    const draining = this.worker.stopping;
    return {
      ready: !draining && store.ok && heartbeat.ok,
      workerId: this.worker.id,
      checks: { draining, store, heartbeat },
    };
  }

  private async storeAnswers(): Promise<Readiness['checks']['store']> {
    this.reading ??= this.options.store.loadProgress('waybill-health-probe').then(
      () => {
        this.reading = null;
      },
      (error: unknown) => {
        this.reading = null;
        throw error;
      },
    );
    let timer: ReturnType<Clock['setTimeout']> | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = this.clock.setTimeout(
        () => reject(new Error(`the store did not answer within ${this.timeoutMs} ms`)),
        this.timeoutMs,
        { keepAlive: false },
      );
    });
    try {
      await Promise.race([this.reading, timeout]);
      return { ok: true };
    } catch (error) {
      return { ok: false, error: error instanceof Error ? error.message : String(error) };
    } finally {
      this.clock.clearTimeout(timer);
    }
  }
}

/** Serves the worker's health and metrics on host:port (0: any free port) until closed. */
export async function serveHealth(
  worker: Worker,
  options: HealthOptions & { host: string; port: number },
): Promise<HealthServer> {
  const readiness = new ReadinessCheck(worker, options);
  const server = createServer((req, res) => {
    answer(req, res, worker, readiness).catch((error: unknown) => {
      if (!res.headersSent) send(res, 500, { error: error instanceof Error ? error.message : String(error) });
      else res.destroy();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const shown = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return {
    url: `http://${shown}:${address.port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

async function answer(req: IncomingMessage, res: ServerResponse, worker: Worker, readiness: ReadinessCheck) {
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    res.setHeader('allow', 'GET, HEAD');
    return send(res, 405, { error: 'only GET and HEAD are served here' });
  }
  const path = new URL(req.url ?? '/', 'http://worker').pathname;
  switch (path) {
    case '/livez':
      return send(res, 200, { live: true, workerId: worker.id });
    case '/readyz':
    case '/healthz': {
      const r = await readiness.check();
      return send(res, r.ready ? 200 : 503, r);
    }
    case '/metrics': {
      const text = await worker.metrics.text();
      res.writeHead(200, { 'content-type': METRICS_CONTENT_TYPE, 'cache-control': 'no-store' });
      return void res.end(req.method === 'HEAD' ? undefined : text);
    }
    default:
      return send(res, 404, { error: `no ${path} here: /livez, /readyz, /healthz and /metrics are` });
  }
}

function send(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store' });
  res.end(`${JSON.stringify(body)}\n`);
}
