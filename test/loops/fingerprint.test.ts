/**
 * A run id reused with other inputs: runAgent fingerprints each item by default (canonical JSON, sha-256),
 * so a committed step met again with a different item is IdempotencyKeyReuseError — whether the step comes
 * round again (a map behind its commits) or the loop resumes past it — and never the old result returned.
 * The built-in workflows fingerprint what their steps send. Real stores, both backends.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runAgent } from '../../lib/checkpoint/agent';
import { Checkpoint } from '../../lib/checkpoint/checkpoint';
import { contentKey, stepKey } from '../../lib/checkpoint/keys';
import { builtinRegistry, promptOf } from '../../lib/engine/workflows';
import { IdempotencyKeyReuseError } from '../../lib/errors';
import type { Store } from '../../lib/store/contract';
import { backends, type StoreHandle } from '../support/backends';
import { tempDir } from '../support/tmp';
import { openTestStore, runToEnd } from '../workflows/harness';

const list = await backends();

describe.each(list)('runAgent fingerprints on $name', (backend) => {
  let h: StoreHandle;
  let store: Store;
  beforeEach(async () => {
    h = await backend.open();
    store = h.store;
  });
  afterEach(() => h.close());

  const run = (inputs: unknown[], options: Parameters<typeof runAgent>[3] = {}) => {
    const seen: unknown[] = [];
    const done = runAgent(
      inputs,
      new Checkpoint(store, 'reused', { workerId: 'w' }),
      (item) => {
        seen.push(item);
        return { echoed: item };
      },
      options,
    );
    return { done, seen };
  };

  it('fingerprints each step by content, stable across key order, and refuses a changed item when its step comes round again', async () => {
    const first = run([{ a: 1, b: 2 }, 'two', 3]);
    expect(await first.done).toMatchObject({ executed: 3 });
    const committed = await store.listCommitted('reused');
    // Equal values give equal fingerprints whatever their key order: stable across processes.
    expect(committed.map((c) => c.fingerprint)).toEqual([contentKey({ b: 2, a: 1 }), contentKey('two'), contentKey(3)]);

    // The map is behind (a crash between commit and map, or another writer): step 1 comes round again.
    await store.saveProgress({
      runId: 'reused',
      step: 1,
      stateJson: '{"processed":1}',
      executed: 0,
      skipped: 0,
      awaited: 0,
    });
    const again = run([{ a: 1, b: 2 }, 'CHANGED', 3]);
    await expect(again.done).rejects.toBeInstanceOf(IdempotencyKeyReuseError);
    expect(again.seen).toEqual([]);
    expect((await store.getCommitted(stepKey('reused', 1)))!.resultJson).toBe('{"echoed":"two"}');
    const reuse = (await store.listEvents('reused')).filter((e) => e.outcome === 'key_reuse');
    expect(reuse).toHaveLength(1);
    expect(reuse[0]).toMatchObject({ idemKey: stepKey('reused', 1), step: 1 });
  });

  it('refuses to resume past done steps whose items changed, running nothing; the same items resume as before', async () => {
    expect(await run(['a', 'b', 'c']).done).toMatchObject({ executed: 3 });
    const changedLast = run(['a', 'b', 'Z', 'd']);
    await expect(changedLast.done).rejects.toMatchObject({
      code: 'IDEMPOTENCY_KEY_REUSE',
      idemKey: stepKey('reused', 2),
    });
    const changedFirst = run(['Z', 'b', 'c', 'd']);
    await expect(changedFirst.done).rejects.toMatchObject({
      code: 'IDEMPOTENCY_KEY_REUSE',
      idemKey: stepKey('reused', 0),
    });
    expect([...changedLast.seen, ...changedFirst.seen]).toEqual([]);
    expect(await store.countCommitted('reused')).toBe(3);

    const same = run(['a', 'b', 'c', 'd']);
    expect(await same.done).toMatchObject({ executed: 1, skipped: 0 });
    expect(same.seen).toEqual(['d']);
  });

  it('takes a fingerprint of your own, or none', async () => {
    expect(
      await run(['a', 'b'], { fingerprint: (item, step) => `v1-${step}-${String(item).length}` }).done,
    ).toMatchObject({ executed: 2 });
    expect((await store.listCommitted('reused')).map((c) => c.fingerprint)).toEqual(['v1-0-1', 'v1-1-1']);
    // Off: the old behaviour, for loops whose items legitimately change under a stable id.
    await store.saveProgress({ runId: 'reused', step: 0, stateJson: '{}', executed: 0, skipped: 0, awaited: 0 });
    const off = run(['x', 'y'], { fingerprint: false });
    expect(await off.done).toMatchObject({ executed: 0, skipped: 2 });
  });
});

describe('built-in workflows fingerprint what their steps send', () => {
  it('agent-batch by prompt and notify by outbox and step; a reused run id with other prompts fails as key reuse', async () => {
    const { store } = openTestStore();
    const input = { items: ['one', 'two', 'three'], latencyMs: 0, failureRate: 0 };
    expect(await runToEnd(store, builtinRegistry(), { workflow: 'agent-batch', id: 'batch-fp', input })).toMatchObject({
      status: 'completed',
    });
    const rows = (await store.listCommitted('batch-fp')).sort((a, b) => a.step! - b.step!);
    expect(rows.map((r) => r.fingerprint)).toEqual(input.items.map((_, n) => contentKey(promptOf(input, n))));

    const outbox = 'outbox.jsonl';
    const notify = builtinRegistry({ dataDir: tempDir('waybill-fp-outbox-').path });
    expect(
      await runToEnd(store, notify, { workflow: 'notify', id: 'notify-fp', input: { count: 2, outbox } }),
    ).toMatchObject({ status: 'completed' });
    const sent = (await store.listCommitted('notify-fp')).sort((a, b) => a.step! - b.step!);
    expect(sent.map((r) => r.fingerprint)).toEqual([0, 1].map((step) => contentKey({ outbox, step })));

    // The same id again with other prompts, its old runs row and map gone (as if started afresh): step 0 is
    // committed with another fingerprint, so the run fails as key reuse instead of returning the old answers.
    store.db.exec(`DELETE FROM runs WHERE id = 'batch-fp'; DELETE FROM progress WHERE run_id = 'batch-fp'`);
    const reused = await runToEnd(store, builtinRegistry(), {
      workflow: 'agent-batch',
      id: 'batch-fp',
      input: { ...input, items: ['ONE', 'two', 'three'] },
    });
    expect(reused).toMatchObject({ status: 'failed' });
    expect(reused.error).toMatch(/idempotency key batch-fp:step:0 was committed with fingerprint/);
    expect((await store.getCommitted(stepKey('batch-fp', 0)))!.resultJson).toBe(rows[0]!.resultJson);
  });
});
