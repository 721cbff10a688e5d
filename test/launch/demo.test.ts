/**
 * npm start's demo: queued into an empty store, queued again each time it completes, until the user starts a
 * run of their own. On a real SQLite store, completing each run as a worker does (claim, finish).
 */
import { describe, expect, it } from 'vitest';
import { builtinRegistry } from '../../lib/engine/workflows';
import { DEMO_INPUT, decideDemo, demoTick, nextDemoId, REPLAYS_MAX } from '../../lib/launch/demo';
import { openTestStore } from '../workflows/harness';

const TTL = 30_000;

describe('the demo run', () => {
  it('is queued into an empty store, replayed after each completion, and stops once the user starts a run', async () => {
    const { store, dir } = openTestStore();
    const registry = builtinRegistry({ dataDir: dir.path });
    const complete = async (id: string) => {
      const run = await store.claimRun({ workerId: 'w', leaseMs: 60_000, workflows: ['agent-batch'] });
      expect(run?.id).toBe(id);
      expect(await store.finishRun(id, 'w', { status: 'completed', outputJson: '{}' })).toBe(true);
    };

    expect(await demoTick(store, registry, TTL)).toEqual({ queue: 'demo-agent-batch' });
    const first = await store.getRun('demo-agent-batch');
    expect(first).toMatchObject({ status: 'queued', totalSteps: DEMO_INPUT.count });
    expect(await store.getRun('demo-review-and-send')).toMatchObject({ status: 'queued', workflow: 'review-and-send' });
    // Long enough to watch: minutes, not the minute the old demo took.
    expect((DEMO_INPUT.count * DEMO_INPUT.latencyMs) / 60_000).toBeGreaterThanOrEqual(3);

    // Running: nothing to do yet, and ten looks queue nothing.
    for (let i = 0; i < 10; i++)
      expect(await demoTick(store, registry, TTL)).toMatchObject({ wait: true, done: false });
    await complete('demo-agent-batch');
    expect(await demoTick(store, registry, TTL)).toEqual({ queue: 'demo-agent-batch-2' });
    expect(await demoTick(store, registry, TTL)).toMatchObject({ wait: true, done: false });
    await complete('demo-agent-batch-2');
    expect(await demoTick(store, registry, TTL)).toEqual({ queue: 'demo-agent-batch-3' });

    // The user starts their own: no demo is queued after the current one, ever.
    await store.createRun({ id: 'mine', workflow: 'agent-batch', inputJson: '{"count":1}', totalSteps: 1 });
    await complete('demo-agent-batch-3');
    expect(await demoTick(store, registry, TTL)).toMatchObject({
      wait: true,
      done: true,
      why: 'the store has runs of its own',
    });
    const ids = (await store.listRuns({ limit: 50, claimTtlMs: TTL })).map((r) => r.id).sort();
    // Issue 15: the first demo brings one review-and-send run beside it (an approval waiting on the first page), never replayed.
    expect(ids).toEqual([
      'demo-agent-batch',
      'demo-agent-batch-2',
      'demo-agent-batch-3',
      'demo-review-and-send',
      'mine',
    ]);
  });

  it('stops when the demo was cancelled or has replayed enough, and never queues into a store with runs', () => {
    const at = { createdAt: 1, updatedAt: 1 };
    expect(decideDemo([{ id: 'demo-agent-batch', status: 'cancelled', ...at }])).toMatchObject({ done: true });
    expect(decideDemo([{ id: `demo-agent-batch-${REPLAYS_MAX + 1}`, status: 'completed', ...at }])).toMatchObject({
      done: true,
    });
    expect(decideDemo([{ id: 'nightly', status: 'completed', ...at }])).toMatchObject({ done: true });
    expect(decideDemo([{ id: 'demo-agent-batch', status: 'failed', ...at }])).toMatchObject({ done: false });
    expect([null, 'demo-agent-batch', 'demo-agent-batch-9'].map(nextDemoId)).toEqual([
      'demo-agent-batch',
      'demo-agent-batch-2',
      'demo-agent-batch-10',
    ]);
  });
});
