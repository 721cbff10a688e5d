/**
 * GET /api/metrics, the route handler itself, on a real SQLite file: Prometheus text with the store's
 * numbers, and a failing store answered with a 500 JSON message that carries no internals.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { runAgent } from '../../lib/checkpoint/agent';
import { Checkpoint } from '../../lib/checkpoint/checkpoint';
import { createLogger } from '../../lib/engine/log';
import type { Store } from '../../lib/store/contract';
import { openStore } from '../../lib/store/index';
import { namingProblems } from '../support/prometheus';
import { makeTempDir } from '../support/tmp';

const dir = makeTempDir('waybill-metrics-route-');
// The handler reads its store through lib/config, like the server: set before the first import of it.
process.env.DATABASE_URL = `file:${dir.file('w.db')}`;
// The server's log, caught: the failure's details must be there and not in the response.
const logged: string[] = [];
(globalThis as { waybillServerLog?: unknown }).waybillServerLog = createLogger({ component: 'web' }, (line) =>
  logged.push(line),
);
const { GET } = await import('../../app/api/metrics/route');
const cache = globalThis as { waybillStore?: Promise<unknown> };

afterAll(async () => {
  await ((await cache.waybillStore) as Store | undefined)?.close();
  dir.remove();
});

describe('GET /api/metrics', () => {
  it("serves the store's counts in Prometheus text format", async () => {
    const store = await openStore(process.env.DATABASE_URL!, { synchronous: 'normal' });
    try {
      await runAgent([1, 2, 3], new Checkpoint(store, 'r1', { workerId: 'w1' }), (x) => x);
      await store.createRun({ id: 'q1', workflow: 'w', inputJson: '{}', totalSteps: null });
      await store.registerWorker({ id: 'w1', host: 'h', pid: 1 });
    } finally {
      await store.close();
    }
    const response = await GET(
      new Request('http://127.0.0.1:3000/api/metrics', { headers: { host: '127.0.0.1:3000' } }),
    );
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('text/plain; version=0.0.4; charset=utf-8');
    const lines = (await response.text()).split('\n');
    expect(lines).toContain('# TYPE waybill_steps_total counter');
    expect(lines).toContain('waybill_steps_total{outcome="executed"} 3');
    expect(lines).toContain('waybill_steps_total{outcome="failed"} 0');
    expect(lines).toContain('waybill_runs{status="queued"} 1');
    expect(lines).toContain('waybill_runs{status="idle"} 1');
    expect(lines).toContain('waybill_claims{state="orphaned"} 0');
    expect(lines).toContain('# TYPE waybill_step_duration_seconds histogram');
    expect(lines).toContain('waybill_step_duration_seconds_bucket{outcome="executed",le="+Inf"} 3');
    expect(lines).toContain('waybill_step_duration_seconds_count{outcome="executed"} 3');
    // Commit durations are each worker's own (its --health-port /metrics): the store keeps only each run's last.
    expect(lines.filter((l) => l.includes('waybill_commit_duration_seconds'))).toEqual([]);
    expect(lines.filter((l) => l.startsWith('waybill_worker_heartbeat_age_seconds{worker="w1"} '))).toHaveLength(1);
    expect(namingProblems(lines.join('\n'))).toEqual([]);
  });

  it("answers a store failure with a 500 in the API's error shape and no internals", async () => {
    // A real failure: the server's store closed under the handler.
    const store = (await cache.waybillStore) as Store;
    await store.close();
    const response = await GET(
      new Request('http://127.0.0.1:3000/api/metrics', { headers: { host: '127.0.0.1:3000' } }),
    );
    expect(response.status).toBe(500);
    expect(await response.json()).toEqual({
      error: { code: 'INTERNAL', message: 'internal error: the request did not complete (see the server log)' },
    });
    const line = JSON.parse(logged.at(-1)!) as {
      component: string;
      msg: string;
      route: string;
      error: string;
      stack: string;
    };
    expect(line).toMatchObject({
      component: 'web',
      msg: 'metrics scrape failed',
      route: '/api/metrics',
      error: 'TypeError: The database connection is not open',
    });
    expect(line.stack).toContain('sqlite/metrics');
  });
});
