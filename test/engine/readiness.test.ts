/**
 * A worker's readiness (what /readyz answers, lib/engine/worker/health.ts), on a real SQLite store and the
 * controlled clock: not ready before its first heartbeat, ready until its last one is more than 3 heartbeat
 * intervals old to the millisecond, ready again once a beat lands, not ready while draining, nor when the
 * store no longer answers. The heartbeat is held by a gate in front of the store's heartbeatWorker, the
 * one call that decides it; every other call reaches the store.
 */
import { expect, it } from 'vitest';
import { Worker } from '../../lib/engine/worker';
import { ReadinessCheck } from '../../lib/engine/worker/health';
import { WorkflowRegistry } from '../../lib/engine/workflow';
import type { RunStore, Store } from '../../lib/store/contract';
import { sqliteBackend } from '../support/backends';
import { until } from '../support/until';

/** A heartbeat held until opened; it then answers that the worker's row was there. */
interface Gate {
  beaten: Promise<boolean>;
  open(): void;
}

function closedGate(): Gate {
  let resolve: (beaten: boolean) => void = () => undefined;
  const beaten = new Promise<boolean>((r) => {
    resolve = r;
  });
  return { beaten, open: () => resolve(true) };
}

it('follows the heartbeat to the millisecond, the drain and the store', async () => {
  const h = await sqliteBackend.open();
  let gate: Gate | null = null;
  const store = new Proxy(h.store, {
    get(target, name) {
      const held = gate?.beaten;
      if (name === 'heartbeatWorker' && held) return () => held;
      const value = Reflect.get(target, name, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  }) as Store & RunStore;
  const worker = new Worker({ store, registry: new WorkflowRegistry([]), heartbeatMs: 100, clock: h.clock });
  const readiness = new ReadinessCheck(worker, { store, clock: h.clock });

  expect(await readiness.check()).toEqual({
    ready: false,
    workerId: worker.id,
    checks: { draining: false, store: { ok: true }, heartbeat: { ok: false, ageMs: null, limitMs: 300 } },
  });

  const done = worker.run();
  await until('the first heartbeat', () => worker.heartbeat.lastAt !== null);
  expect(await readiness.check()).toMatchObject({ ready: true, checks: { heartbeat: { ok: true, ageMs: 0 } } });

  // Beats stop landing: the one at 100 ms hangs, and those after it wait for it.
  gate = closedGate();
  await h.elapse(300);
  expect(await readiness.check()).toMatchObject({ ready: true, checks: { heartbeat: { ok: true, ageMs: 300 } } });
  await h.elapse(1);
  expect(await readiness.check()).toMatchObject({
    ready: false,
    checks: { store: { ok: true }, heartbeat: { ok: false, ageMs: 301, limitMs: 300 } },
  });

  // The held beat lands: ready again, its age counted from now.
  const held = gate;
  gate = null;
  held.open();
  await until('the held beat to land', () => worker.heartbeat.lastAt === h.clock.now());
  expect(await readiness.check()).toMatchObject({ ready: true, checks: { heartbeat: { ok: true, ageMs: 0 } } });

  worker.stop();
  expect(await readiness.check()).toMatchObject({ ready: false, checks: { draining: true, store: { ok: true } } });
  await h.settle(done);

  await h.close();
  expect(await readiness.check()).toMatchObject({
    ready: false,
    checks: { store: { ok: false, error: expect.stringContaining('not open') } },
  });
});
