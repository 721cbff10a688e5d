import { describe, expect, it } from 'vitest';
import { stepKey } from '../../lib/checkpoint/keys';
import { builtinRegistry, outboxAt, readOutbox, type Delivery } from '../../lib/engine/workflows';
import { openTestStore, runToEnd } from './harness';

describe('notify through a worker', () => {
  it('delivers one notification per step; a resend after a lost commit is refused as a duplicate', async () => {
    const { store, dir } = openTestStore();
    const outbox = dir.file('outbox.jsonl');
    // Step 3 was delivered by a worker that died before committing: the receiver has the key already.
    await outboxAt(outbox).deliver({ key: stepKey('notify-1', 3), step: 3, worker: 'dead-worker' });

    const run = await runToEnd(store, builtinRegistry(), { workflow: 'notify', id: 'notify-1', input: { count: 25, outbox, latencyMs: 1 } },
      { id: 'worker-a' });
    expect(run).toMatchObject({ status: 'completed', totalSteps: 25 });
    expect(JSON.parse(run.outputJson!)).toMatchObject({ processed: 25, executed: 25, skipped: 0 });

    const summary = readOutbox(outbox);
    expect(summary).toMatchObject({ delivered: 25, duplicates: 1, unreadable: 0 });
    expect([...summary.byKey.values()].every((n) => n === 1)).toBe(true);

    const results = (await store.listCommitted('notify-1')).map((row) => JSON.parse(row.resultJson) as Delivery);
    expect(results).toHaveLength(25);
    for (const result of results) {
      expect(result).toMatchObject({ key: stepKey('notify-1', result.step!), worker: 'worker-a', pid: process.pid });
      expect(result.status).toBe(result.step === 3 ? 'duplicate' : 'delivered');
    }
  });

  it('a second run over the same outbox delivers its own keys', async () => {
    const { store, dir } = openTestStore();
    const outbox = dir.file('outbox.jsonl');
    const registry = builtinRegistry();
    await runToEnd(store, registry, { workflow: 'notify', id: 'n-a', input: { count: 5, outbox } });
    await runToEnd(store, registry, { workflow: 'notify', id: 'n-b', input: { count: 5, outbox } });
    expect(readOutbox(outbox)).toMatchObject({ delivered: 10, duplicates: 0 });
  });
});
