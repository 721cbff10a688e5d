/**
 * The stores of a suite that runs workflows on both backends, and the workers serving them in the test's process,
 * kept in one place so that no suite forgets a step of the teardown. Called once at module level; after each test
 * it stops every worker and awaits its loop, then closes every store, so no test leaks a worker or a handle.
 *
 *   const stores = servedStores();
 *   …
 *     const h = await stores.open(name);
 *     if (!h) return null; // that backend is not available: the case skips
 *     stores.serve(h, registry, { concurrency: 2 });
 *
 * A worker polls every 20 ms and beats every 50 ms on the store's clock (test/support/backends.ts), so a test
 * moving that clock moves its worker too; `options` override any of it, the store served among them.
 *
 * A file's own afterEach for state its workflows write (an effects array) goes above the call: vitest runs
 * after-hooks last registered first, so it then runs once the workers have stopped, as it must.
 */
import { afterEach, beforeAll } from 'vitest';
import { Worker, type WorkerOptions } from '../../lib/engine/worker';
import type { WorkflowRegistry } from '../../lib/engine/workflow';
import { type Backend, backends, type StoreHandle } from './backends';

/** A worker started by `serve`, and its loop: a test that stops it itself awaits `done`. */
export interface ServedWorker {
  worker: Worker;
  done: Promise<void>;
}

export interface ServedStores {
  /** A fresh store on that backend, closed after the test; null when the backend is not available. */
  open(name: Backend['name']): Promise<StoreHandle | null>;
  /** Starts a worker over the store, stopped after the test (again, if the test stopped it). */
  serve(h: StoreHandle, registry: WorkflowRegistry, options?: Omit<Partial<WorkerOptions>, 'registry'>): ServedWorker;
}

export function servedStores(): ServedStores {
  let list: Backend[] = [];
  beforeAll(async () => {
    list = await backends();
  });
  const handles: StoreHandle[] = [];
  const workers: ServedWorker[] = [];
  afterEach(async () => {
    for (const w of workers.splice(0)) {
      w.worker.stop();
      await w.done;
    }
    for (const h of handles.splice(0)) await h.close();
  });
  return {
    async open(name) {
      const backend = list.find((b) => b.name === name);
      if (!backend) return null;
      const h = await backend.open();
      handles.push(h);
      return h;
    },
    serve(h, registry, options = {}) {
      const worker = new Worker({ store: h.store, registry, pollMs: 20, heartbeatMs: 50, clock: h.clock, ...options });
      const served = { worker, done: worker.run() };
      workers.push(served);
      return served;
    },
  };
}
