/**
 * GET /api/metrics never counts a stalled run as running: a run whose owner stopped heartbeating is counted
 * under waybill_runs_stalled{reason="owner_silent"}, a queued run no live worker serves under
 * {reason="no_live_worker"}. The route handler itself on a real SQLite file; the silent worker's last
 * heartbeat is written a minute back, as a worker that froze a minute ago left it.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../lib/engine/log';
import type { Store } from '../../lib/store/contract';
import { openSqliteStore } from '../../lib/store/sqlite';
import { makeTempDir } from '../support/tmp';

const dir = makeTempDir('waybill-metrics-stalled-');
process.env.DATABASE_URL = `file:${dir.file('w.db')}`;
(globalThis as { waybillServerLog?: unknown }).waybillServerLog = createLogger({ component: 'web' }, () => undefined);
const { GET } = await import('../../app/api/metrics/route');
const cache = globalThis as { waybillStore?: Promise<unknown> };

afterAll(async () => {
  await ((await cache.waybillStore) as Store | undefined)?.close();
  dir.remove();
});

describe('GET /api/metrics and stalled runs', () => {
  it('counts a run on a silent owner as stalled, not running, and a queued run with no worker as stalled', async () => {
    const store = openSqliteStore({ path: dir.file('w.db'), synchronous: 'normal' });
    try {
      await store.registerWorker({ id: 'frozen', host: 'h', pid: 1 });
      await store.publishWorkflows('frozen', [
        { name: 'alpha', description: null, inputSchemaJson: '{}', totalSteps: 1, version: null },
      ]);
      for (const id of ['r1', 'r2']) {
        await store.createRun({ id, workflow: 'alpha', inputJson: '{}', totalSteps: 1 });
        await store.claimRun({ workerId: 'frozen', leaseMs: 300_000, workflows: ['alpha'], runId: id });
      }
      await store.createRun({ id: 'q1', workflow: 'agent-batch', inputJson: '{}', totalSteps: 1 });
      store.db.prepare('UPDATE workers SET heartbeat_at = heartbeat_at - 60').run();
    } finally {
      await store.close();
    }
    const response = await GET(
      new Request('http://127.0.0.1:3000/api/metrics', { headers: { host: '127.0.0.1:3000' } }),
    );
    expect(response.status).toBe(200);
    const lines = (await response.text()).split('\n');
    expect(lines).toContain('waybill_runs{status="running"} 0');
    expect(lines).toContain('waybill_runs{status="queued"} 1');
    expect(lines).toContain('waybill_runs_stalled{reason="owner_silent"} 2');
    expect(lines).toContain('waybill_runs_stalled{reason="no_live_worker"} 1');
  });
});
