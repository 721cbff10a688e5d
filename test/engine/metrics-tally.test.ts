/**
 * The worker's share of the metrics (lib/engine/worker/tally.ts): every 30 s of its clock it advances the stored
 * tally of the dashboard's bounds, and a scrape's values do not change with it. Nothing waits on the wall clock:
 * the store's clock is moved (on PostgreSQL the turn's store call then lands in real time, and is waited for).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { Worker } from '../../lib/engine/worker';
import { TALLY_EVERY_MS } from '../../lib/engine/worker/tally';
import { WorkflowRegistry } from '../../lib/engine/workflow';
import { DURATION_BOUNDS_MS, type InsightStore, type Store } from '../../lib/store/contract';
import { backends, type StoreHandle } from '../support/backends';

const list = await backends();
const KEY = DURATION_BOUNDS_MS.join();

const open: StoreHandle[] = [];
const running: { worker: Worker; done: Promise<void> }[] = [];
afterEach(async () => {
  for (const w of running.splice(0)) {
    w.worker.stop();
    await w.done;
  }
  for (const h of open.splice(0)) await h.close();
});

describe.each(list)('a worker on $name', (backend) => {
  it("advances the dashboard's stored tally every 30 s of its clock, and the scrape's values stay", async () => {
    const h = await backend.open();
    open.push(h);
    const store = h.store as Store & InsightStore;
    for (const [i, ms] of [5, 50, 5000].entries()) {
      const common = { idemKey: `k${i}`, runId: 'm', token: `t${i}`, workerId: 'w0', step: null };
      await store.claim({ ...common, attempt: 1, leaseMs: 60_000, claimTtlMs: 60_000 });
      await store.commit({ ...common, resultJson: '1', fingerprint: null, durationMs: ms });
    }
    const scrape = () => store.metricsSnapshot({ claimTtlMs: 60_000, boundsMs: DURATION_BOUNDS_MS, settleMs: 0 });
    const before = await scrape();
    expect(before.steps.executed).toBe(3);
    const stored = () =>
      h.rows<{ committed_mark: number | null; steps_json: string }>(
        `SELECT committed_mark, steps_json FROM metrics_tally WHERE bounds = '${KEY}'`,
      );

    const worker = new Worker({ store, registry: new WorkflowRegistry(), clock: h.clock, webhooks: false });
    running.push({ worker, done: worker.run() });
    // Its timers are set once it has started (on PostgreSQL after a few real round trips): then the clock moves.
    for (let i = 0; i < 200 && worker.sleeping === null; i++) await sleep(10);
    expect(worker.sleeping).not.toBeNull();
    await h.elapse(TALLY_EVERY_MS - 1000);
    expect(await stored()).toEqual([]);
    await h.elapse(1000);
    // The turn's store call is under way; on PostgreSQL it takes real time to land.
    let row = await stored();
    for (let i = 0; i < 100 && row.length === 0; i++) {
      await sleep(50);
      row = await stored();
    }
    expect(row).toHaveLength(1);
    expect(row[0]!.committed_mark).not.toBeNull();
    expect(JSON.parse(row[0]!.steps_json)).toMatchObject({ executed: 3 });
    const after = await scrape();
    expect(after.steps).toEqual(before.steps);
    expect(after.stepDurations).toEqual(before.stepDurations);
  });
});
