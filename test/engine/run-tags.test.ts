/**
 * ctx.setTags, ctx.addTags and ctx.setMetadata, run by a real Worker over a real store on every backend: each
 * change is a step of its own, written once however often the run is replayed (here: parked on a signal and
 * resumed, which replays it from the top), and a later change is never undone by replaying an earlier one. A
 * bad tag, or a change past the per-run limits, fails the run at once (no retry) and writes nothing.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { waits } from '../../lib/control';
import type { Caller } from '../../lib/control/caller';
import { startRun } from '../../lib/engine/runs';
import { Worker } from '../../lib/engine/worker';
import { defineWorkflow, WorkflowRegistry } from '../../lib/engine/workflow';
import type { RunStatus, RunTagChange, Store } from '../../lib/store/contract';
import { backends, type StoreHandle, untilRun } from '../support/backends';

const list = await backends();
const seen: string[] = [];

const tagger = defineWorkflow({
  name: 'tagger',
  input: z.object({}),
  async run(ctx) {
    await ctx.setTags(['stage:one', 'team/a']);
    const first = await ctx.setMetadata({ stage: 'one', customer: 'acme' });
    seen.push(JSON.stringify(first));
    await ctx.waitForSignal('go');
    await ctx.addTags(['stage:two']);
    return ctx.setMetadata({ stage: 'two' });
  },
});

const wrong = defineWorkflow({
  name: 'wrong',
  input: z.object({ kind: z.enum(['bad-tag', 'too-many', 'bad-key']) }),
  async run(ctx, input) {
    await ctx.setTags(Array.from({ length: 15 }, (_, i) => `t${i}`));
    if (input.kind === 'bad-tag') await ctx.addTags(['a b']);
    if (input.kind === 'too-many') await ctx.addTags(Array.from({ length: 10 }, (_, i) => `u${i}`));
    if (input.kind === 'bad-key') await ctx.setMetadata({ 'a=b': 'v' });
  },
});

const leaf = defineWorkflow({ name: 'leaf', input: z.object({}), run: async () => 'leaf' });
const family = defineWorkflow({
  name: 'family',
  input: z.object({ tag: z.string() }),
  async run(ctx, input) {
    const id = await ctx.startChild('kid', 'leaf', {}, { tags: [input.tag], metadata: { from: 'parent' } });
    return ctx.waitForChild(id);
  },
});

const registry = new WorkflowRegistry([tagger, wrong, leaf, family]);
const alice: Caller = { actor: 'alice (operator)', role: 'operator', channel: 'api' };

describe.each(list)('a run’s own tags on $name', (backend) => {
  let h: StoreHandle;
  let worker: Worker | null = null;
  let running: Promise<void> = Promise.resolve();
  const writes: RunTagChange[] = [];

  async function open(): Promise<Store> {
    h = await backend.open();
    const store = h.store;
    // The real store, its writes counted: how many times a change was written, not what it did.
    const tagRun = store.tagRun.bind(store);
    store.tagRun = (id, change) => {
      writes.push(change);
      return tagRun(id, change);
    };
    worker = new Worker({ store, registry, pollMs: 10, heartbeatMs: 50, clock: h.clock });
    running = worker.run();
    return store;
  }
  afterEach(async () => {
    worker?.stop();
    await h.settle(running);
    await h.close();
    writes.length = 0;
    seen.length = 0;
  });

  // The store `open()` gives is the handle's.
  const until = (_store: Store, id: string, want: RunStatus) => untilRun(h, id, want);

  it('writes each change once across a replay, and ends with the last of them', async () => {
    const store = await open();
    const run = await startRun(store, registry, { workflow: 'tagger', input: {}, tags: ['given'] });
    await until(store, run.id, 'waiting');
    expect(await store.getRunTags(run.id)).toEqual({
      tags: ['stage:one', 'team/a'],
      metadata: { customer: 'acme', stage: 'one' },
    });
    await waits.signal({ store: async () => store, claimTtlMs: 30_000, maxBytes: 1_000_000 }, alice, {
      runId: run.id,
      name: 'go',
      payload: null,
    });
    await until(store, run.id, 'completed');
    const final = { tags: ['stage:one', 'stage:two', 'team/a'], metadata: { customer: 'acme', stage: 'two' } };
    expect(await store.getRunTags(run.id)).toEqual(final);
    expect(JSON.parse((await store.getRun(run.id))!.outputJson!)).toEqual(final);
    // Four changes, each written once; the replay after the signal answered the first two from their steps.
    expect(writes).toEqual([
      { tags: ['stage:one', 'team/a'] },
      { metadata: { stage: 'one', customer: 'acme' } },
      { addTags: ['stage:two'] },
      { metadata: { stage: 'two' } },
    ]);
    const answer = JSON.stringify({ tags: ['stage:one', 'team/a'], metadata: { customer: 'acme', stage: 'one' } });
    expect(seen).toEqual([answer, answer]);
    expect((await store.listCommitted(run.id, { limit: 10 })).map((c) => c.idemKey).sort()).toEqual([
      `${run.id}:tags#1`,
      `${run.id}:tags#2`,
      `${run.id}:tags#3`,
      `${run.id}:tags#4`,
    ]);
    expect((await store.listRuns({ claimTtlMs: 30_000, tags: ['stage:two'] })).map((r) => r.id)).toEqual([run.id]);
  });

  it('fails a run at a bad tag, a bad key or one past the limit, at once, and writes nothing of it', async () => {
    const store = await open();
    const expected = {
      'bad-tag': 'ctx.addTags: tags.0: letters, digits and . _ : / @ - only, starting with a letter or digit',
      'too-many': 'ctx.addTags: tags: a run may have at most 20 tags, it would have 25',
      'bad-key': 'ctx.setMetadata: metadata.a=b: letters, digits and . _ - only, starting with a letter or digit',
    };
    for (const [kind, error] of Object.entries(expected)) {
      const run = await startRun(store, registry, { workflow: 'wrong', input: { kind } });
      await until(store, run.id, 'failed');
      const row = await store.getRun(run.id);
      expect({ attempts: row!.attempts, error: row!.error }).toMatchObject({ attempts: 1 });
      expect(row!.error).toContain(error);
      expect((await store.getRunTags(run.id)).tags).toHaveLength(15);
      expect(await store.getRunTags(run.id)).toMatchObject({ metadata: {} });
    }
    // The bad tag and the bad key never reached the store; the one past the limit did, and was refused there.
    expect(writes.filter((w) => w.addTags)).toEqual([{ addTags: Array.from({ length: 10 }, (_, i) => `u${i}`) }]);
  });

  it('starts a child with tags of its own, and refuses a bad one before the child is started', async () => {
    const store = await open();
    const run = await startRun(store, registry, { workflow: 'family', input: { tag: 'batch:7' } });
    await until(store, run.id, 'completed');
    expect(await store.getRunTags(`${run.id}:kid`)).toEqual({ tags: ['batch:7'], metadata: { from: 'parent' } });
    expect(await store.getRunTags(run.id)).toEqual({ tags: [], metadata: {} });
    expect((await store.listRuns({ claimTtlMs: 30_000, tags: ['batch:7'] })).map((r) => r.id)).toEqual([
      `${run.id}:kid`,
    ]);
    const bad = await startRun(store, registry, { workflow: 'family', input: { tag: 'no spaces' } });
    await until(store, bad.id, 'failed');
    expect((await store.getRun(bad.id))!.error).toContain(
      'ctx.startChild(kid): tags.0: letters, digits and . _ : / @ - only, starting with a letter or digit',
    );
    expect(await store.getRun(`${bad.id}:kid`)).toBeNull();
  });
});
