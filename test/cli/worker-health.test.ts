/**
 * `waybill worker --health-port`: a real worker process serving /livez, /readyz (/healthz) and /metrics.
 *
 * On PostgreSQL behind a TCP proxy, the store goes away (every connection cut, new ones refused) and comes
 * back: /healthz turns 503 naming the store within seconds (a bound derived from the worker's heartbeat and
 * probe timeout), then 200 again within seconds, while /livez stays 200 throughout. On SQLite,
 * two scrapes of the commit histogram around a second run: every count only grows, by the run's commits.
 */
import { describe, expect, it, onTestFinished } from 'vitest';
import { PROBE_TIMEOUT_MS, STALE_BEATS } from '../../lib/engine/worker/health';
import { DEFAULT_RETRY } from '../../lib/store/postgres/retry';
import { type Child, spawnCommand } from '../support/child';
import { postgresAvailable, startPgProxy, testSchema } from '../support/postgres';
import { families, namingProblems, sample } from '../support/prometheus';
import { until } from '../support/until';
import { BIN, freshDb, json, runCli } from './support';

const pgUp = await postgresAvailable('worker health tests');
const HEARTBEAT_MS = 200;
/**
 * How soon readiness must follow the store, from health.ts's own rules, times 4 for a busy machine. Down: the
 * last beat landed at most a beat before the cut, so STALE_BEATS beats after the cut the heartbeat is stale,
 * and a probe then answers 503 within PROBE_TIMEOUT_MS whatever the store does: 0.6 + 2 s. Back: a probe's read
 * and the next beat connect at once, or after the longest backoff of a store retry in flight (DEFAULT_RETRY's
 * maxMs), the beat a beat later, and a probe's read waited PROBE_TIMEOUT_MS at most: 0.2 + 1 + 2 s. Times 4:
 * 10.4 s and 12.8 s, which a loaded machine's scheduling does not reach, and a worker that noticed its store
 * only by its run lease (30 s) or once a long retry gave up does.
 */
const UNREADY_WITHIN_MS = 4 * (STALE_BEATS * HEARTBEAT_MS + PROBE_TIMEOUT_MS);
const READY_WITHIN_MS = 4 * (HEARTBEAT_MS + DEFAULT_RETRY.maxMs + PROBE_TIMEOUT_MS);

/** A worker on `db` serving its health port on a free loopback port; its base URL once it says it. */
async function healthWorker(db: string, id: string): Promise<{ worker: Child; base: string }> {
  const worker = spawnCommand(process.execPath, [BIN, '--db', db, 'worker', '--id', id, '--health-port', '0'], {
    env: { WAYBILL_HEALTH_HOST: '127.0.0.1', WAYBILL_HEARTBEAT_MS: String(HEARTBEAT_MS), LOG_LEVEL: 'info' },
  });
  const base = await until(
    `the worker's health URL (${worker.stderr()})`,
    () => /"msg":"health and metrics on (http:\/\/[^"]+)"/.exec(worker.stderr())?.[1],
  );
  return { worker, base };
}

async function get(url: string): Promise<{ status: number; body: string }> {
  const response = await fetch(url);
  return { status: response.status, body: await response.text() };
}

async function stop(worker: Child): Promise<void> {
  worker.kill('SIGTERM');
  expect(await worker.exited).toEqual({ code: 0, signal: null });
}

describe.skipIf(!pgUp)('worker health on PostgreSQL', () => {
  it('turns unready when its store goes away and ready again after, alive throughout', async () => {
    const schema = await testSchema('wb_health');
    const proxy = await startPgProxy();
    onTestFinished(() => proxy.close());
    const url = new URL(proxy.url);
    url.searchParams.set('schema', schema.name);
    const { worker, base } = await healthWorker(url.toString(), 'health-pg');

    /** The body of /healthz once it answers `status`, within `timeoutMs` (until's default without one). */
    const healthzAnswers = (status: number, what: string, timeoutMs?: number) =>
      until(
        what,
        async () => {
          const r = await get(`${base}/healthz`);
          return r.status === status && r.body;
        },
        { timeoutMs },
      );
    const ready = await healthzAnswers(200, '/healthz to answer 200');
    expect(JSON.parse(ready)).toMatchObject({
      ready: true,
      workerId: 'health-pg',
      checks: { draining: false, store: { ok: true }, heartbeat: { ok: true, limitMs: 600 } },
    });
    expect(await get(`${base}/readyz`)).toMatchObject({ status: 200 });

    proxy.cut();
    const cutAt = Date.now();
    const down = await healthzAnswers(503, '/healthz to answer 503', UNREADY_WITHIN_MS);
    expect(Date.now() - cutAt).toBeLessThanOrEqual(UNREADY_WITHIN_MS);
    expect(JSON.parse(down)).toMatchObject({ ready: false, checks: { store: { ok: false } } });
    // Not dead: a restart would not bring the store back.
    expect(JSON.parse((await get(`${base}/livez`)).body)).toEqual({ live: true, workerId: 'health-pg' });

    proxy.open();
    const openedAt = Date.now();
    const back = await healthzAnswers(200, '/healthz to answer 200 again', READY_WITHIN_MS);
    expect(Date.now() - openedAt).toBeLessThanOrEqual(READY_WITHIN_MS);
    expect(JSON.parse(back)).toMatchObject({ ready: true, checks: { store: { ok: true }, heartbeat: { ok: true } } });
    await stop(worker);
  });
});

describe('worker metrics', () => {
  it('serves a commit histogram whose counts never go down between scrapes', async () => {
    const db = await freshDb();
    const { worker, base } = await healthWorker(db.url, 'health-sqlite');
    const runOnce = async (id: string) => {
      const input = JSON.stringify({ count: 4, outbox: `${id}.jsonl`, latencyMs: 0 });
      json(await runCli(['--db', db.url, 'start', 'notify', '--id', id, '--input', input, '--json']));
      await until(
        `${id} to complete`,
        async () => json(await runCli(['--db', db.url, 'inspect', id, '--json'])).run.status === 'completed',
        { intervalMs: 100 },
      );
    };
    const buckets = (text: string) =>
      text
        .split('\n')
        .filter((l) => l.startsWith('waybill_commit_duration_seconds_bucket{'))
        .map((l) => Number(l.slice(l.lastIndexOf(' ') + 1)));

    await runOnce('first');
    const one = (await get(`${base}/metrics`)).body;
    await runOnce('second');
    const two = (await get(`${base}/metrics`)).body;

    expect(families(one)).toContainEqual({ name: 'waybill_commit_duration_seconds', type: 'histogram' });
    const first = sample(one, 'waybill_commit_duration_seconds_count')!;
    const second = sample(two, 'waybill_commit_duration_seconds_count')!;
    // Each run of the same workflow and size commits as often: the second scrape has the first's and as many more.
    expect(first).toBeGreaterThan(0);
    expect(second).toBe(2 * first);
    expect(sample(two, 'waybill_commit_duration_seconds_bucket{le="+Inf"}')).toBe(second);
    const [b1, b2] = [buckets(one), buckets(two)];
    expect(b1).toHaveLength(15);
    // Cumulative across bounds, and across scrapes: no bucket is ever lower than before.
    for (const b of [b1, b2]) expect(b).toEqual([...b].sort((x, y) => x - y));
    expect(b2.map((n, i) => n >= b1[i]!)).toEqual(b2.map(() => true));
    expect(sample(two, 'waybill_commit_duration_seconds_sum')).toBeGreaterThanOrEqual(
      sample(one, 'waybill_commit_duration_seconds_sum')!,
    );
    expect(sample(two, 'waybill_worker_slots')).toBe(1);
    expect(sample(two, 'waybill_worker_runs')).toBe(0);
    expect(families(two).map((f) => f.name)).toContain('process_resident_memory_bytes');
    expect(namingProblems(two)).toEqual([]);
    await stop(worker);
  });

  it('refuses a --health-port that is not a port, naming the flag, before anything is opened', async () => {
    const db = await freshDb();
    const before = db.dump();
    const r = await db.cli(['worker', '--health-port', '99999']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('--health-port: must be a TCP port number, 0-65535');
    expect(db.dump()).toEqual(before);
  });
});
