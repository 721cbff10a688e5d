/**
 * A run is held by at most one execution at a time. A worker stalled (SIGSTOP) past its run lease and its
 * claim lease wakes up to find its own run "runnable": it must carry on with the execution it has in hand,
 * not start a second one beside it. Counted on the real process, on every backend: each step's side effect
 * ran once, nothing awaited, no takeover, the run taken once.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { makeTarget, targetKinds } from '../support/targets';
import { tempDir } from '../support/tmp';
import { executionsByKey, startWorker, until } from './support';

const kinds = await targetKinds('one-execution tests');

describe.each(kinds)('one execution per run on %s', (kind) => {
  it('one worker (--concurrency 2) stalled past its leases three times runs each step exactly once', async () => {
    const target = await makeTarget(kind);
    const data = tempDir('waybill-outbox-');
    const outbox = data.file('outbox.jsonl');
    const store = await target.store();
    const steps = 24;
    await store.createRun({
      id: 'stall',
      workflow: 'notify',
      inputJson: JSON.stringify({ count: steps, outbox: 'outbox.jsonl', latencyMs: 300 }),
      totalSteps: steps,
    });
    // The stall outlasts both leases; the claim lease stays well above SQLite's 5 s busy timeout. The default
    // heartbeat renews the run lease every second, so on waking the worker's idle poll (every 250 ms) usually
    // comes before its renewal and finds the run's lease passed: the moment a second execution would start.
    const env = { WAYBILL_RUN_LEASE_MS: '3000', WAYBILL_LEASE_MS: '7500', WAYBILL_DATA_DIR: data.path };
    const worker = startWorker(target, ['--id', 'solo', '--concurrency', '2'], env);

    const tried = new Set<string>();
    let stalls = 0;
    while (stalls < 3) {
      // Early in a step's 300 ms latency: the worker is inside the side effect when it stops.
      const claim = await until(
        'a fresh claim',
        async () =>
          (await store.listClaims({ runId: 'stall', claimTtlMs: 30_000 })).find(
            (c) => c.workerId && !tried.has(c.idemKey) && Date.now() / 1000 - c.claimedAt < 0.1,
          ),
        // A claim is fresh for a tenth of a second: look often enough to see most of them.
        { intervalMs: 20 },
      );
      tried.add(claim.idemKey);
      worker.child.kill('SIGSTOP');
      const still = (await store.listClaims({ runId: 'stall', claimTtlMs: 30_000 })).find(
        (c) => c.idemKey === claim.idemKey,
      );
      if (still?.token !== claim.token || (await store.getCommitted(claim.idemKey))) {
        worker.child.kill('SIGCONT');
        continue;
      }
      await sleep(8500);
      worker.child.kill('SIGCONT');
      stalls++;
    }
    await until('the run to complete', async () => (await store.getRun('stall'))?.status === 'completed');

    const executions = executionsByKey(outbox);
    expect(executions.size).toBe(steps);
    expect([...executions.entries()].filter(([, n]) => n !== 1)).toEqual([]);
    expect((await store.listCommitted('stall', { limit: 100 })).length).toBe(steps);
    expect(await store.loadProgress('stall')).toMatchObject({ step: steps, executed: steps, awaited: 0, skipped: 0 });
    const events = await store.listEvents('stall', { limit: 1000 });
    expect(events.filter((e) => e.outcome !== 'skipped')).toEqual([]);
    expect((await store.getRun('stall'))?.attempts).toBe(1);
  }, 240_000);
});
