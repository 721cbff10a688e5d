/**
 * Retention on every backend: finished runs older than the limit lose their committed rows, events,
 * progress and runs row, in batches; running, paused and recent runs, runs with a claim, and outside
 * clients' runs (unless asked) keep every row. Exact counts, and a second prune removes nothing.
 *
 * The cutoff is a time between the old rows and the recent one, read from the rows themselves: SQLite's
 * clock is moved by hand, PostgreSQL's is the database's, and neither test depends on how fast it runs.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runAgent } from '../../lib/checkpoint/agent';
import { Checkpoint } from '../../lib/checkpoint/checkpoint';
import type { PruneCounts, RetentionStore, RunStore, Store } from '../../lib/store/contract';
import { pruneAll } from '../../lib/store/shared/prune';
import { backends, type StoreHandle } from '../support/backends';

const list = await backends();
type FullStore = Store & RunStore & RetentionStore;

describe.each(list)('prune on $name', (backend) => {
  let h: StoreHandle;
  let store: FullStore;

  beforeEach(async () => {
    h = await backend.open();
    store = h.store as FullStore;
  });
  afterEach(() => h.close());

  /** A run taken by a worker, `steps` committed, then ended as given (or left running). */
  async function run(id: string, steps: number, end: 'completed' | 'failed' | 'running'): Promise<void> {
    await store.createRun({ id, workflow: 'w', inputJson: '{}', totalSteps: steps });
    expect((await store.claimRun({ workerId: 'wk', leaseMs: 60_000, workflows: ['w'] }))?.id).toBe(id);
    await runAgent(
      Array.from({ length: steps }, (_, i) => i),
      new Checkpoint(store, id, { workerId: 'wk' }),
      (x) => x,
    );
    if (end !== 'running') expect(await store.finishRun(id, 'wk', { status: end })).toBe(true);
  }

  async function rows(
    runId: string,
  ): Promise<{ run: boolean; committed: number; events: number; progress: boolean; logs?: number }> {
    const logs = (await store.readRunLogs(runId, { limit: 100 })).length;
    return {
      run: (await store.getRun(runId)) !== null,
      committed: await store.countCommitted(runId),
      events: (await store.listEvents(runId)).length,
      progress: (await store.loadProgress(runId)) !== null,
      // Only runs that printed have a count here, so the rows of the others read as before.
      ...(logs > 0 ? { logs } : {}),
    };
  }
  /** `n` lines of a program's output in the run's log. */
  const print = (runId: string, n: number) =>
    store.appendRunLogs(
      Array.from({ length: n }, (_, i) => ({ runId, at: 1, stream: 'stdout' as const, line: `line ${i}` })),
      { keep: 100 },
    );

  it('removes old finished runs in batches, keeps everything live, recent or external, and is idempotent', async () => {
    // Three old finished runs: 3 committed, 1 progress, 1 event each.
    await run('old-completed', 3, 'completed');
    await store.recordEvent({ runId: 'old-completed', outcome: 'operator', detail: 'note' });
    // A program's run prints: its lines go with it, counted against the batch like the rest.
    await print('old-completed', 5);
    await run('old-failed', 3, 'failed');
    await store.recordEvent({ runId: 'old-failed', outcome: 'operator', detail: 'note' });
    await store.createRun({ id: 'old-cancelled', workflow: 'w', inputJson: '{}', totalSteps: 3 });
    await runAgent([0, 1, 2], new Checkpoint(store, 'old-cancelled'), (x) => x);
    await store.actOnRun('old-cancelled', 'cancel', 'test');
    // Old but not prunable: running, paused, finished with a claim on a key.
    await run('old-running', 3, 'running');
    await print('old-running', 2);
    await store.createRun({ id: 'old-paused', workflow: 'x', inputJson: '{}', totalSteps: 2 });
    await store.actOnRun('old-paused', 'pause', 'test');
    await run('old-claimed', 2, 'completed');
    await store.claim({
      idemKey: 'old-claimed:late',
      runId: 'old-claimed',
      token: 't',
      workerId: 'wk',
      step: null,
      attempt: 1,
      leaseMs: 60_000,
      claimTtlMs: 60_000,
    });
    // Outside clients' runs: no runs row. One idle, one holding a claim.
    await runAgent([0, 1], new Checkpoint(store, 'ext-idle'), (x) => x);
    await runAgent([0], new Checkpoint(store, 'ext-claim'), (x) => x);
    await h.insertOutsideClaim('ext-claim:step:1', 'ext-claim');

    await h.elapse(1000);
    await run('recent', 1, 'completed');
    const before = (await store.getRun('recent'))!.finishedAt! - 0.5;

    const expected: PruneCounts = { runs: 3, external: 0, committed: 9, events: 3, progress: 3, logs: 5 };
    expect(await store.planPrune({ before })).toEqual(expected);
    expect(await rows('old-completed')).toEqual({ run: true, committed: 3, events: 1, progress: true, logs: 5 });

    const batches: PruneCounts[] = [];
    const removed = await pruneAll(store, { before, batchSize: 2 }, { onBatch: (b) => batches.push(b) });
    expect(removed).toEqual(expected);
    // No transaction deleted more than the batch size of log lines, committed rows and events.
    expect(batches.every((b) => b.logs + b.committed + b.events <= 2)).toBe(true);
    expect(batches.length).toBeGreaterThan(1);

    for (const id of ['old-completed', 'old-failed', 'old-cancelled']) {
      expect(await rows(id)).toEqual({ run: false, committed: 0, events: 0, progress: false });
    }
    expect(await rows('old-running')).toEqual({ run: true, committed: 3, events: 0, progress: true, logs: 2 });
    expect(await rows('old-paused')).toEqual({ run: true, committed: 0, events: 1, progress: false });
    expect(await rows('old-claimed')).toEqual({ run: true, committed: 2, events: 0, progress: true });
    expect(await rows('recent')).toEqual({ run: true, committed: 1, events: 0, progress: true });
    expect(await rows('ext-idle')).toEqual({ run: false, committed: 2, events: 0, progress: true });

    expect(await pruneAll(store, { before })).toEqual({
      runs: 0,
      external: 0,
      committed: 0,
      events: 0,
      progress: 0,
      logs: 0,
    });

    // Outside clients' runs only when asked, and never one holding a claim.
    const external: PruneCounts = { runs: 0, external: 1, committed: 2, events: 0, progress: 1, logs: 0 };
    expect(await store.planPrune({ before, includeExternal: true })).toEqual(external);
    expect(await pruneAll(store, { before, includeExternal: true })).toEqual(external);
    expect(await rows('ext-idle')).toEqual({ run: false, committed: 0, events: 0, progress: false });
    expect(await rows('ext-claim')).toEqual({ run: false, committed: 1, events: 0, progress: true });
    expect(await pruneAll(store, { before, includeExternal: true })).toEqual({
      runs: 0,
      external: 0,
      committed: 0,
      events: 0,
      progress: 0,
      logs: 0,
    });
  });

  it('leaves a finished run that an operator retried before the batch', async () => {
    await run('retried', 2, 'failed');
    await h.elapse(1000);
    const before = (await store.getRun('retried'))!.finishedAt! + 0.5;
    await store.actOnRun('retried', 'retry', 'test');
    expect(await store.planPrune({ before })).toEqual({
      runs: 0,
      external: 0,
      committed: 0,
      events: 0,
      progress: 0,
      logs: 0,
    });
    expect(await pruneAll(store, { before })).toEqual({
      runs: 0,
      external: 0,
      committed: 0,
      events: 0,
      progress: 0,
      logs: 0,
    });
    expect(await rows('retried')).toEqual({ run: true, committed: 2, events: 1, progress: true });
  });

  it("takes a pruned run's streamed text with it and keeps a live run's", async () => {
    await run('old-streamed', 1, 'completed');
    await run('live-streamed', 1, 'running');
    for (const runId of ['old-streamed', 'live-streamed'])
      await store.appendStepStream({ runId, step: 0, attempt: 1, seq: 0, text: `text of ${runId}` });
    await h.elapse(1000);
    const before = (await store.getRun('old-streamed'))!.finishedAt! + 0.5;
    expect((await pruneAll(store, { before })).runs).toBe(1);
    expect(await store.readStepStream('old-streamed', 0)).toBeNull();
    expect(await store.readStepStream('live-streamed', 0)).toEqual({ attempt: 1, chunks: ['text of live-streamed'] });
  });
});
