/**
 * Idle workers are woken, not polled (#17). The worker here runs on a ManualClock the test never moves unless it
 * says so: its poll timer (30 s either way) cannot fire, so a run it takes was announced by a wake, and its
 * counters say which (`notified`, `polled`). On PostgreSQL the wake is a NOTIFY from the transaction that queued
 * the run; on SQLite the watcher's look after another connection's commit. When the listener's connection dies
 * (pg_terminate_backend, then a network cut through a proxy) the worker polls meanwhile, the listener reconnects,
 * and notifications take over again.
 */

import { sql } from 'drizzle-orm';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ManualClock, systemClock } from '../../lib/clock';
import { Worker } from '../../lib/engine/worker';
import { defineWorkflow, WorkflowRegistry } from '../../lib/engine/workflow';
import type { Store, Wake } from '../../lib/store/contract';
import type { PostgresStore } from '../../lib/store/index';
import { openStore } from '../../lib/store/index';
import { postgresConnection } from '../../lib/store/postgres/connection';
import { notifyRunnable, wakeChannel } from '../../lib/store/postgres/notify';
import { type PgProxy, postgresAvailable, startPgProxy, TEST_DATABASE_URL, testSchema } from '../support/postgres';
import { type TargetKind, targetKinds } from '../support/targets';
import { tempDir } from '../support/tmp';
import { until } from './support';

const kinds = await targetKinds('the wake tests');
const onPostgres = await postgresAvailable('the wake tests');

/** `failing` fails its first execution of each run, and succeeds once retried. */
const failedOnce = new Set<string>();
const registry = new WorkflowRegistry([
  defineWorkflow({ name: 'wf', input: z.object({}), run: async () => 'done' }),
  defineWorkflow({
    name: 'failing',
    input: z.object({}),
    maxAttempts: 1,
    run: async (ctx) => {
      if (!failedOnce.has(ctx.runId)) {
        failedOnce.add(ctx.runId);
        throw new Error('the first execution fails');
      }
      return 'done';
    },
  }),
]);

const opened: Store[] = [];
const proxies: PgProxy[] = [];
afterEach(async () => {
  for (const store of opened.splice(0)) await store.close();
  for (const proxy of proxies.splice(0)) await proxy.close();
});

async function open(url: string, options: { sessionUrl?: string } = {}): Promise<Store> {
  const store = await openStore(url, { synchronous: 'normal', ...options });
  opened.push(store);
  return store;
}

async function storeUrl(kind: TargetKind): Promise<string> {
  return kind === 'sqlite' ? `file:${tempDir('waybill-wakes-').file('w.db')}` : (await testSchema('wb_wake')).url;
}

/**
 * A worker that can only be woken: its clock moves only when the test ticks it; it polls every 10 minutes while
 * it is woken, and every 30 s (of that clock) while it is not.
 */
function sleepyWorker(store: Store) {
  const clock = new ManualClock();
  const worker = new Worker({
    store,
    registry,
    id: 'sleepy',
    heartbeatMs: 1000,
    pollMs: 30_000,
    idlePollMs: 600_000,
    clock,
  });
  const running = worker.run();
  return {
    worker,
    clock,
    async stop() {
      worker.stop();
      await running;
    },
  };
}

const statusOf = async (store: Store, id: string) => (await store.getRun(id))?.status;
const finished =
  (store: Store, id: string, status = 'completed') =>
  async () =>
    (await statusOf(store, id)) === status;
const run = (id: string, workflow = 'wf') => ({ id, workflow, inputJson: '{}', totalSteps: null });
const WAIT = 30_000;

describe.each(kinds)('wakes on %s', (kind) => {
  it('a worker whose poll cannot fire takes each run that becomes queued by a wake alone', async () => {
    failedOnce.clear();
    const url = await storeUrl(kind);
    const workerStore = await open(url);
    const other = await open(url);
    const sleepy = sleepyWorker(workerStore);
    try {
      await until('the worker to listen', async () => sleepy.worker.listening, { timeoutMs: WAIT });
      expect(sleepy.worker.wakes).toEqual({ notified: 0, polled: 0 });

      // Queued by another process's store: one wake, one pick.
      await other.createRun(run('r1'));
      await until('r1 to complete', finished(other, 'r1'), { timeoutMs: WAIT });
      expect(sleepy.worker.wakes).toEqual({ notified: 1, polled: 0 });

      // Queued through the worker's own store.
      await workerStore.createRun(run('r2'));
      await until('r2 to complete', finished(other, 'r2'), { timeoutMs: WAIT });
      expect(sleepy.worker.wakes).toEqual({ notified: 2, polled: 0 });

      // Failed, then retried by an operator: queued again, woken again.
      await other.createRun(run('r3', 'failing'));
      await until('r3 to fail', finished(other, 'r3', 'failed'), { timeoutMs: WAIT });
      expect(sleepy.worker.wakes).toEqual({ notified: 3, polled: 0 });
      await other.actOnRun('r3', 'retry', 'operator');
      await until('r3 to complete once retried', finished(other, 'r3'), { timeoutMs: WAIT });
      expect(sleepy.worker.wakes).toEqual({ notified: 4, polled: 0 });
      expect((await other.getRun('r3'))?.attempts).toBe(2);
    } finally {
      await sleepy.stop();
    }
  });
});

describe.each(kinds)('wakes on %s, for a run whose worker died', (kind) => {
  it('marking its worker dead passes the run lease and wakes the idle worker, which takes it over at once', async () => {
    const url = await storeUrl(kind);
    const workerStore = await open(url);
    const other = await open(url);
    await other.registerWorker({ id: 'doomed', host: 'elsewhere', pid: 1 });
    await other.createRun(run('orphan'));
    expect(await other.claimRun({ workerId: 'doomed', leaseMs: 600_000, workflows: ['wf'] })).toMatchObject({
      id: 'orphan',
    });
    const sleepy = sleepyWorker(workerStore);
    try {
      await until('the worker to listen', async () => sleepy.worker.sleeping === 'listening', { timeoutMs: WAIT });
      expect(await other.markWorkerDead('doomed', 'its pid is gone')).toBe(0);
      await until('the orphaned run to complete', finished(other, 'orphan'), { timeoutMs: WAIT });
      expect(sleepy.worker.wakes).toEqual({ notified: 1, polled: 0 });
      expect((await other.listEvents('orphan')).map((e) => e.detail)).toEqual([
        'run lease of doomed passed or its worker died; resumed by sleepy',
      ]);
    } finally {
      await sleepy.stop();
    }
  });
});

describe.skipIf(!onPostgres)('wakes on postgres, when the listener’s connection dies', () => {
  it('a notification for a workflow the worker does not serve does not wake it', async () => {
    const url = await storeUrl('postgres');
    const workerStore = await open(url);
    const other = await open(url);
    const sleepy = sleepyWorker(workerStore);
    try {
      await until('the worker to listen', async () => sleepy.worker.listening, { timeoutMs: WAIT });
      await other.createRun(run('elsewhere-1', 'served-elsewhere'));
      // Notifications arrive in commit order: once the next run's wake has been taken, the first one's came before.
      await other.createRun(run('r1'));
      await until('r1 to complete', finished(other, 'r1'), { timeoutMs: WAIT });
      expect(sleepy.worker.wakes).toEqual({ notified: 1, polled: 0 });
      expect(await statusOf(other, 'elsewhere-1')).toBe('queued');
    } finally {
      await sleepy.stop();
    }
  });

  it('notifyRunnable wakes subscribers when its transaction commits, and never when it rolls back', async () => {
    const url = await storeUrl('postgres');
    const store = await open(url);
    const seen: Wake[] = [];
    const unsubscribe = store.subscribeWakes((wake) => seen.push(wake));
    try {
      await until('the listener', async () => seen.some((w) => w.kind === 'listening'), { timeoutMs: WAIT });
      if (!('pool' in store)) throw new Error('expected the PostgreSQL store');
      const c = postgresConnection((store as PostgresStore).pool, systemClock);
      await c
        .inTransaction(async (client) => {
          await c.once(sql`SELECT ${notifyRunnable('rolled-back')}`, undefined, client);
          throw new Error('roll it back');
        })
        .catch(() => undefined);
      await c.inTransaction(async (client) => {
        await c.once(sql`SELECT ${notifyRunnable('committed')}`, undefined, client);
        await c.once(sql`SELECT ${notifyRunnable(null)}`, undefined, client);
      });
      await until('the committed wakes', async () => seen.length === 3, { timeoutMs: WAIT });
      expect(seen).toEqual([{ kind: 'listening' }, { kind: 'runnable', workflow: 'committed' }, { kind: 'runnable' }]);
    } finally {
      unsubscribe();
    }
  });

  it('reconnects after pg_terminate_backend and after a cut, polling while it cannot listen', async () => {
    const schema = await testSchema('wb_wake');
    const proxy = await startPgProxy(TEST_DATABASE_URL);
    proxies.push(proxy);
    // The sessions (LISTEN, the liveness lock) go through the proxy, the pool straight to the database.
    const workerStore = await open(schema.url, { sessionUrl: proxy.url });
    const other = await open(schema.url);
    const seen: Wake['kind'][] = [];
    const unsubscribe = workerStore.subscribeWakes((wake) => {
      if (wake.kind !== 'runnable') seen.push(wake.kind);
    });
    const sleepy = sleepyWorker(workerStore);
    const listener = async () =>
      (
        await schema.admin.query<{ pid: number }>(
          `SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND query = $1`,
          [`LISTEN ${wakeChannel(schema.name)}`],
        )
      ).map((r) => r.pid);
    try {
      await until('the worker to listen', async () => sleepy.worker.sleeping === 'listening', { timeoutMs: WAIT });
      const [first] = await listener();
      expect(first).toEqual(expect.any(Number));

      // Its backend terminated: the listener notices, reconnects on a new backend, and says so.
      await schema.admin.query('SELECT pg_terminate_backend($1)', [first]);
      await until('the listener to reconnect', async () => seen.join() === 'listening,lost,listening', {
        timeoutMs: WAIT,
      });
      const [second, ...more] = await listener();
      expect(more).toEqual([]);
      expect(second).not.toBe(first);
      await other.createRun(run('after-terminate'));
      await until('the run queued after the terminate', finished(other, 'after-terminate'), { timeoutMs: WAIT });
      expect(sleepy.worker.wakes).toEqual({ notified: 1, polled: 0 });

      // The network cut, and kept cut: no listener, so the worker polls at its short interval (30 s here).
      proxy.cut();
      await until('the worker to sleep until its short poll', async () => sleepy.worker.sleeping === 'polling', {
        timeoutMs: WAIT,
      });
      // Nothing can wake it now: the run waits for the poll, which only the clock's move lets fire.
      await other.createRun(run('during-cut'));
      // A second at a time until the poll fires: it is due 15-45 s in (30 s ± 50%), and the one after it at least
      // 15 s later, which the clock never reaches. One tick of 45 s could fire both under a slow machine.
      for (let ticked = 0; sleepy.worker.wakes.polled === 0; ticked += 1000) {
        if (ticked > 45_000) throw new Error('the short poll did not fire within 45 s of its clock');
        await sleepy.clock.tick(1000);
      }
      await until('the run queued during the cut, by the poll', finished(other, 'during-cut'), { timeoutMs: WAIT });
      expect(sleepy.worker.wakes).toEqual({ notified: 1, polled: 1 });

      // The network back: the listener's backoff brings it back, and notifications wake the worker again.
      proxy.open();
      await until('the listener to come back', async () => sleepy.worker.sleeping === 'listening', { timeoutMs: WAIT });
      await other.createRun(run('after-cut'));
      await until('the run queued once the listener came back', finished(other, 'after-cut'), { timeoutMs: WAIT });
      expect(sleepy.worker.wakes).toEqual({ notified: 2, polled: 1 });
      expect(seen).toEqual(['listening', 'lost', 'listening', 'lost', 'listening']);
    } finally {
      unsubscribe();
      await sleepy.stop();
    }
  });
});
