/**
 * One listing's "why queued" reasons agree with each other (lib/control/queued.ts), on every backend and the
 * store's clock: they are judged from one read of the limits' use, so a run that ends or a second that passes while
 * the list is built cannot tell one run of a key "2 of 2 are running" and the next "a slot is free", nor put a later
 * place in a rate line before an earlier slot. Below its concurrency limit, a key's free places go to the runs the
 * pick takes first (priority, then age); each run behind them is told how many queued runs are ahead of it. The run
 * page's reason for a run is the list's, word for word.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type QueuedReason, queuedReasonOf } from '../../lib/control/queued';
import { readRunsPage } from '../../lib/control/runs-list';
import { readStallFacts } from '../../lib/control/stalled';
import type { RunLimits } from '../../lib/domain/run-limits';
import type { Store } from '../../lib/store/contract';
import { backends, type StoreHandle } from '../support/backends';

const list = await backends();
const LEASE = 600_000;

/**
 * The store as a listing sees it while the world moves on: its first read of the limits' use goes through, then
 * `meanwhile` changes the store (a run ends, time passes), and any later read of the use sees the change, as a read
 * a moment later would. `settled` is the change, for the test to await before it looks again.
 */
function changingAfterFirstUseRead(store: Store, meanwhile: () => Promise<void>) {
  let changed: Promise<void> | null = null;
  const proxy = new Proxy(store, {
    get(target, key) {
      const value = Reflect.get(target, key, target);
      if (typeof value !== 'function') return value;
      if (typeof key !== 'string' || !key.startsWith('limitUse')) return value.bind(target);
      return async (...args: unknown[]) => {
        if (changed) {
          await changed;
          return value.apply(target, args);
        }
        const answer = Promise.resolve(value.apply(target, args));
        changed = answer.then(meanwhile);
        return answer;
      };
    },
  });
  return { store: proxy, settled: () => changed ?? Promise.resolve() };
}

describe.each(list)("one listing's queued reasons agree on $name", (backend) => {
  let h: StoreHandle;
  let store: Store;
  const queue = (id: string, workflow: string, input: unknown, priority = 0) =>
    store.createRun({ id, workflow, inputJson: JSON.stringify(input), totalSteps: 1, priority });
  const pick = async (workflow: string, limits: RunLimits) =>
    (await store.claimRun({ workerId: 'w-1', leaseMs: LEASE, workflows: [workflow], limits: { [workflow]: limits } }))
      ?.id ?? null;
  /** A live worker with free slots that serves `workflow` under `limits`, so only the limits hold a run back. */
  const serve = async (workflow: string, limits: RunLimits) => {
    await store.registerWorker({ id: 'w-1', host: 'h', pid: 1, slots: 100 });
    await store.publishWorkflows('w-1', [
      { name: workflow, description: null, inputSchemaJson: '{}', totalSteps: 1, version: null, limits },
    ]);
    await store.heartbeatWorker('w-1');
  };
  const facts = () => readStallFacts(store, { now: h.clock.now(), runLeaseMs: LEASE, heartbeatMs: 60_000 });
  /** The queued runs' reasons in one listing, by id. */
  const listed = async (from: Store = store) => {
    const page = await readRunsPage(from, { status: 'queued', limit: 50, claimTtlMs: 30_000 }, facts());
    return new Map(page.runs.map((run) => [run.id, run.queuedReason]));
  };
  /** Each run's reason as the run page reads it, alone. */
  const alone = async (ids: string[]) => {
    const judged = await facts();
    const out = new Map<string, QueuedReason | null>();
    for (const id of ids) out.set(id, await queuedReasonOf(store, (await store.getRun(id))!, judged));
    return out;
  };
  const messages = (reasons: Map<string, QueuedReason | null>) =>
    Object.fromEntries([...reasons].map(([id, reason]) => [id, reason?.message ?? null]));
  const slotFree =
    'a slot is free on worker w-1 (2 of 100 busy): at its next poll it takes the queued run of highest priority (the oldest among equals)';

  beforeEach(async () => {
    h = await backend.open();
    store = h.store;
  });
  afterEach(() => h.close());

  it('tells every queued run of a full key the same count, though a run ends while the list is read', async () => {
    const limits: RunLimits = { concurrency: { limit: 2, key: 'customer' } };
    await serve('limited', limits);
    await queue('a', 'limited', { customer: 'acme' });
    await queue('b', 'limited', { customer: 'acme' });
    expect([await pick('limited', limits), await pick('limited', limits)]).toEqual(['a', 'b']);
    for (const id of ['q1', 'q2', 'q3', 'q4']) await queue(id, 'limited', { customer: 'acme' });

    const changing = changingAfterFirstUseRead(store, async () => {
      expect(await store.finishRun('a', 'w-1', { status: 'completed' })).toBe(true);
    });
    const reasons = await listed(changing.store);
    await changing.settled();
    const full = '2 of 2 runs for key acme are running';
    expect(messages(reasons)).toEqual({ q1: full, q2: full, q3: full, q4: full });
    for (const reason of reasons.values())
      expect(reason).toEqual({ kind: 'held', workflow: 'limited', limit: 'concurrency', key: 'acme', message: full });
  });

  it('below the limit, gives the free places to the runs the pick takes first and tells the rest their place', async () => {
    const limits: RunLimits = { concurrency: { limit: 3, key: 'customer' } };
    await serve('limited', limits);
    await queue('a', 'limited', { customer: 'acme' });
    await queue('x', 'limited', { customer: 'beta' });
    expect([await pick('limited', limits), await pick('limited', limits)]).toEqual(['a', 'x']);
    // In the pick's order: q2 (the highest priority), q5 (next priority), then q1, q3, q4 by age.
    await queue('q1', 'limited', { customer: 'acme' });
    await queue('q2', 'limited', { customer: 'acme' }, 5);
    await queue('q3', 'limited', { customer: 'acme' });
    await queue('q4', 'limited', { customer: 'acme' });
    await queue('q5', 'limited', { customer: 'acme' }, 1);
    await queue('y', 'limited', { customer: 'beta' });

    const behind = (n: number) =>
      `1 of 3 runs for key acme are running; ${n === 1 ? '1 queued run of the key is' : `${n} queued runs of the key are`} ahead of it (highest priority first, then the oldest)`;
    const reasons = await listed();
    // acme has 2 free places: q2 and q5 would take them; beta has 2 and one queued run.
    expect(messages(reasons)).toEqual({
      q1: behind(2),
      q2: slotFree,
      q3: behind(3),
      q4: behind(4),
      q5: slotFree,
      y: slotFree,
    });
    expect(reasons.get('q3')).toEqual({
      kind: 'held',
      workflow: 'limited',
      limit: 'concurrency',
      key: 'acme',
      place: 4,
      message: behind(3),
    });
    // The run page says of each run what the list says.
    expect(messages(await alone([...reasons.keys()]))).toEqual(messages(reasons));

    // And the pick agrees: the two it takes for acme are the two told a slot is free.
    const taken = [await pick('limited', limits), await pick('limited', limits), await pick('limited', limits)];
    expect(new Set(taken)).toEqual(new Set(['q2', 'q5', 'y']));
    expect(await pick('limited', limits)).toBeNull();
    const full = '3 of 3 runs for key acme are running';
    expect(messages(await listed())).toEqual({ q1: full, q3: full, q4: full });
  });

  it('puts no run its rate limit holds ahead of another for a free place', async () => {
    const limits: RunLimits = {
      concurrency: { limit: 1, key: 'customer' },
      rateLimit: { limit: 2, periodMs: 60_000, key: 'provider' },
    };
    await serve('limited', limits);
    await queue('r0', 'limited', { customer: 'acme', provider: 'openai' });
    await queue('r1', 'limited', { customer: 'beta', provider: 'openai' });
    expect([await pick('limited', limits), await pick('limited', limits)]).toEqual(['r0', 'r1']);
    for (const id of ['r0', 'r1']) expect(await store.finishRun(id, 'w-1', { status: 'completed' })).toBe(true);
    // acme's one place is free; openai's two starts of the minute are taken, so q1 waits, and the pick passes it.
    await queue('q1', 'limited', { customer: 'acme', provider: 'openai' });
    await queue('q2', 'limited', { customer: 'acme', provider: 'anthropic' });
    await queue('q3', 'limited', { customer: 'acme', provider: 'anthropic' });
    const reasons = await listed();
    expect(reasons.get('q1')).toMatchObject({ kind: 'held', limit: 'rate', key: 'openai', place: 1 });
    expect(messages(reasons)).toMatchObject({
      q2: 'a slot is free on worker w-1 (0 of 100 busy): at its next poll it takes the queued run of highest priority (the oldest among equals)',
      q3: '0 of 1 runs for key acme are running; 1 queued run of the key is ahead of it (highest priority first, then the oldest)',
    });
    expect(await pick('limited', limits)).toBe('q2');
  });

  it('keeps a rate line in order: a later place never has an earlier slot, though a second passes mid-list', async () => {
    const rate: RunLimits = { rateLimit: { limit: 3, periodMs: 10_000, key: null } };
    await serve('rated', rate);
    // Three starts a second apart fill the window: T, T+1, T+2.
    for (const id of ['s0', 's1', 's2']) {
      await queue(id, 'rated', {});
      expect(await pick('rated', rate)).toBe(id);
      await h.elapse(1000);
    }
    // Queued at T+3, in the pick's order q1, q2, q3 (priority), and listed in that order too.
    await queue('q3', 'rated', {}, 1);
    await queue('q2', 'rated', {}, 2);
    await queue('q1', 'rated', {}, 3);

    const changing = changingAfterFirstUseRead(store, () => h.elapse(7500));
    const reasons = await listed(changing.store);
    await changing.settled();
    const held = ['q1', 'q2', 'q3'].map((id) => reasons.get(id));
    for (const reason of held) expect(reason).toMatchObject({ kind: 'held', limit: 'rate', key: '' });
    const line = held.map((r) => (r?.kind === 'held' ? { place: r.place, inS: r.nextSlotInS! } : null));
    expect(line.map((at) => at?.place)).toEqual([1, 2, 3]);
    // One read, one moment: the k-th place's slot opens as the k-th start leaves the window, so the slots lie as far
    // apart as the starts do (a second, and on PostgreSQL the moments each pick took).
    const slots = line.map((at) => at?.inS ?? Number.NaN);
    const starts = await Promise.all(['s0', 's1', 's2'].map(async (id) => (await store.getRun(id))!.startedAt!));
    expect(slots[1]! - slots[0]!).toBeCloseTo(starts[1]! - starts[0]!, 6);
    expect(slots[2]! - slots[1]!).toBeCloseTo(starts[2]! - starts[1]!, 6);
    const per = 'rate limit of 3 starts per 10 s of workflow rated';
    expect(held.map((r) => r?.message)).toEqual([
      `${per}: next slot in ${slots[0]!.toFixed(1)} s`,
      `${per}: 2nd in line, its slot in ${slots[1]!.toFixed(1)} s`,
      `${per}: 3rd in line, its slot in ${slots[2]!.toFixed(1)} s`,
    ]);
    if (backend.name === 'sqlite') expect(slots).toEqual([7, 8, 9]);
  });
});
