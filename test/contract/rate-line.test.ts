/**
 * Issue 27 item 2's review of rate limits, on every backend and the store's clock:
 * - a retry is a fresh call to what the limit protects: ten failed runs retried at once under 5 starts a period
 *   start 5 in the first window and are held, by the rate limit, for the next (a resume is still no start);
 * - a held run says when its own slot comes: the k-th in line under a key (in the pick's order: priority, then
 *   age) waits on the window's k-th oldest start while k is within the limit (exact), then on whole periods after
 *   (the earliest, said so). On SQLite the clock stands still, so the messages are exact strings; on PostgreSQL
 *   it ticks, so each message is checked against its own figure, and the figure against the time it was read at.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type QueuedReason, queuedReasonOf } from '../../lib/control/queued';
import { readStallFacts } from '../../lib/control/stalled';
import type { RunLimits } from '../../lib/domain/run-limits';
import type { Store } from '../../lib/store/contract';
import { backends, type StoreHandle } from '../support/backends';

const list = await backends();
const LEASE = 600_000;
const PERIOD_MS = 10_000;

describe.each(list)('a rate limit, its retries and its line on $name', (backend) => {
  let h: StoreHandle;
  let store: Store;
  const queue = (id: string, input: unknown, priority?: number) =>
    store.createRun({
      id,
      workflow: 'rated',
      inputJson: JSON.stringify(input),
      totalSteps: 1,
      ...(priority === undefined ? {} : { priority }),
    });
  const pick = async (limits: Record<string, RunLimits>) =>
    (await store.claimRun({ workerId: 'w-1', leaseMs: LEASE, workflows: ['rated'], limits }))?.id ?? null;
  const picks = async (count: number, limits: Record<string, RunLimits>) => {
    const taken: (string | null)[] = [];
    for (let i = 0; i < count; i++) taken.push(await pick(limits));
    return taken;
  };
  /** A live worker with free slots that serves `rated` under `limits`, so only the limits hold a run back. */
  const serve = async (limits: RunLimits) => {
    await store.registerWorker({ id: 'w-1', host: 'h', pid: 1, slots: 100 });
    await store.publishWorkflows('w-1', [
      { name: 'rated', description: null, inputSchemaJson: '{}', totalSteps: 1, version: null, limits },
    ]);
  };
  /** The run's reason, and the store's clock just before and just after it was read (the same on SQLite). */
  const reason = async (id: string): Promise<{ reason: QueuedReason | null; from: number; to: number }> => {
    await store.heartbeatWorker('w-1');
    const from = await h.now();
    const facts = await readStallFacts(store, { now: h.clock.now(), runLeaseMs: LEASE, heartbeatMs: 60_000 });
    const got = await queuedReasonOf(store, (await store.getRun(id))!, facts);
    return { reason: got, from, to: await h.now() };
  };
  /**
   * A rate-held reason whose slot opens at `slotAt` (store clock): its figure is the time from when it was read,
   * and its message says that figure as `words` does.
   */
  const expectHeld = (
    read: { reason: QueuedReason | null; from: number; to: number },
    key: string,
    place: number,
    slotAt: number,
    words: (inS: string) => string,
  ) => {
    const held = read.reason;
    expect(held).toMatchObject({ kind: 'held', workflow: 'rated', limit: 'rate', key, place });
    const next = held?.kind === 'held' ? held.nextSlotInS! : Number.NaN;
    expect(next).toBeGreaterThanOrEqual(slotAt - read.to - 1e-6);
    expect(next).toBeLessThanOrEqual(slotAt - read.from + 1e-6);
    expect(held?.message).toBe(words(next.toFixed(1)));
  };
  const startedAt = async (id: string) => (await store.getRun(id))!.startedAt;

  beforeEach(async () => {
    h = await backend.open();
    store = h.store;
  });
  afterEach(() => h.close());

  it('counts a retried run as a start when it is next picked, and holds the rest by the rate limit', async () => {
    const rate: RunLimits = { rateLimit: { limit: 5, periodMs: PERIOD_MS, key: null } };
    const limits = { rated: rate };
    await serve(rate);
    const ids = Array.from({ length: 10 }, (_, i) => `f${i}`);
    for (const id of ids) await queue(id, {});
    // Two windows to start them all, and each fails.
    expect(await picks(6, limits)).toEqual([...ids.slice(0, 5), null]);
    await h.elapse(PERIOD_MS + 100);
    expect(await picks(6, limits)).toEqual([...ids.slice(5), null]);
    for (const id of ids) expect(await store.finishRun(id, 'w-1', { status: 'failed', error: 'boom' })).toBe(true);
    await h.elapse(PERIOD_MS + 100);

    // All ten retried at once: none has started since, so each next pick is a start.
    for (const id of ids) await store.actOnRun(id, 'retry', 'op');
    for (const id of ids) expect(await startedAt(id), id).toBeNull();
    const first = await picks(10, limits);
    expect(first.filter((id) => id !== null)).toEqual(ids.slice(0, 5));
    const starts = await Promise.all(ids.slice(0, 5).map(startedAt));
    expect(starts.every((s) => s !== null)).toBe(true);

    // The other five are held by the rate limit, each told its own slot: the k-th oldest start's expiry.
    for (const [k, id] of ids.slice(5).entries()) {
      const slotAt = starts[k]! + PERIOD_MS / 1000;
      const place = k + 1;
      expectHeld(await reason(id), '', place, slotAt, (inS) =>
        place === 1
          ? `rate limit of 5 starts per 10 s of workflow rated: next slot in ${inS} s`
          : `rate limit of 5 starts per 10 s of workflow rated: ${['', '1st', '2nd', '3rd', '4th', '5th'][place]} in line, its slot in ${inS} s`,
      );
    }
    if (backend.name === 'sqlite')
      expect((await reason('f7')).reason?.message).toBe(
        'rate limit of 5 starts per 10 s of workflow rated: 3rd in line, its slot in 10.0 s',
      );

    await h.elapse(PERIOD_MS + 100);
    expect(await picks(6, limits)).toEqual([...ids.slice(5), null]);
  });

  it('counts a rerun run as a start when it is next picked', async () => {
    const rate: RunLimits = { rateLimit: { limit: 2, periodMs: PERIOD_MS, key: null } };
    const limits = { rated: rate };
    await serve(rate);
    const ids = ['r0', 'r1', 'r2'];
    for (const id of ids) await queue(id, {});
    expect(await picks(3, limits)).toEqual(['r0', 'r1', null]);
    await h.elapse(PERIOD_MS + 100);
    expect(await picks(2, limits)).toEqual(['r2', null]);
    for (const id of ids) expect(await store.finishRun(id, 'w-1', { status: 'completed', outputJson: '1' })).toBe(true);
    await h.elapse(PERIOD_MS + 100);

    // Rerun from step 0, all three at once: a rerun starts the run again, so only two fit a period.
    for (const id of ids)
      await store.rerunRun({ runId: id, fromStep: 0, inputJson: null, actor: 'op', reason: null, claimTtlMs: LEASE });
    for (const id of ids) expect(await startedAt(id), id).toBeNull();
    expect(await picks(3, limits)).toEqual(['r0', 'r1', null]);
    await h.elapse(PERIOD_MS + 100);
    expect(await picks(2, limits)).toEqual(['r2', null]);
  });

  it('counts the start a retry or a rerun cleared while its window lasts', async () => {
    const rate: RunLimits = { rateLimit: { limit: 2, periodMs: PERIOD_MS, key: 'provider' } };
    const limits = { rated: rate };
    await serve(rate);
    for (const id of ['a', 'b']) await queue(id, { provider: 'openai' });
    await queue('c', { provider: 'anthropic' });
    expect(await picks(4, limits)).toEqual(['a', 'b', 'c', null]);
    const firstStart = (await startedAt('a'))!;
    // a fails at once and is retried, b completes and is rerun, c completes and is rerun: all inside the window.
    await h.elapse(1000);
    expect(await store.finishRun('a', 'w-1', { status: 'failed', error: 'provider down' })).toBe(true);
    for (const id of ['b', 'c'])
      expect(await store.finishRun(id, 'w-1', { status: 'completed', outputJson: '1' })).toBe(true);
    await store.actOnRun('a', 'retry', 'op');
    for (const id of ['b', 'c'])
      await store.rerunRun({ runId: id, fromStep: 0, inputJson: null, actor: 'op', reason: null, claimTtlMs: LEASE });
    for (const id of ['a', 'b', 'c']) expect(await startedAt(id), id).toBeNull();
    // openai's two starts of this window still count: its runs wait; anthropic has one of two, so c starts again.
    expect(await picks(3, limits)).toEqual(['c', null, null]);
    expectHeld(
      await reason('a'),
      'openai',
      1,
      firstStart + PERIOD_MS / 1000,
      (inS) => `rate limit of 2 starts per 10 s for key openai: next slot in ${inS} s`,
    );
    // Once the first starts leave the window, openai's runs start again, two to a window as before.
    await h.elapse(PERIOD_MS);
    expect(await picks(3, limits)).toEqual(['a', 'b', null]);
    expect(await h.rows<{ run_id: string }>('SELECT run_id FROM earlier_starts ORDER BY run_id')).toEqual([
      { run_id: 'a' },
      { run_id: 'b' },
      { run_id: 'c' },
    ]);
  });

  it('keeps an earlier start for a day, the longest period, and no longer', async () => {
    const rate: RunLimits = { rateLimit: { limit: 1, periodMs: 86_400_000, key: null } };
    const limits = { rated: rate };
    await serve(rate);
    await queue('a', {});
    await queue('b', {});
    expect(await picks(2, limits)).toEqual(['a', null]);
    expect(await store.finishRun('a', 'w-1', { status: 'failed', error: 'x' })).toBe(true);
    await store.actOnRun('a', 'retry', 'op');
    // The day's one start is a's first: neither its retry nor b may start within the day.
    await h.elapse(86_400_000 - 5000);
    expect(await picks(2, limits)).toEqual([null, null]);
    await h.elapse(10_000);
    expect(await picks(2, limits)).toEqual(['a', null]);
    // A start older than a day is not kept when it is cleared, and clearing one drops the workflow's older rows.
    await h.elapse(86_400_000 + 10_000);
    expect(await store.finishRun('a', 'w-1', { status: 'failed', error: 'x' })).toBe(true);
    await store.actOnRun('a', 'retry', 'op');
    expect(await h.rows('SELECT run_id FROM earlier_starts')).toEqual([]);
  });

  it('never holds a resumed run, and a resume keeps its start', async () => {
    const rate: RunLimits = { rateLimit: { limit: 1, periodMs: PERIOD_MS, key: null } };
    const limits = { rated: rate };
    await serve(rate);
    await queue('a', {});
    await queue('b', {});
    expect(await picks(2, limits)).toEqual(['a', null]);
    const first = await startedAt('a');
    await store.actOnRun('a', 'pause', 'op');
    await store.releaseRun('a', 'w-1');
    await store.actOnRun('a', 'resume', 'op');
    expect(await startedAt('a')).toBe(first);
    // Queued again with the window full: no rate reason for it (it takes no slot), and the pick takes it.
    const read = await reason('a');
    expect(read.reason?.kind).toBe('slot-free');
    expect(await picks(2, limits)).toEqual(['a', null]);
    expect(await startedAt('a')).toBe(first);
  });

  it('puts no run its concurrency limit holds ahead of another in a rate line', async () => {
    const both: RunLimits = {
      concurrency: { limit: 1, key: 'customer' },
      rateLimit: { limit: 1, periodMs: PERIOD_MS, key: null },
    };
    await serve(both);
    await queue('x', { customer: 'acme' });
    expect(await pick({ rated: both })).toBe('x');
    const started = (await startedAt('x'))!;
    // y is older than z, but acme's one place is x's: the pick passes y by, and z takes the next slot.
    await queue('y', { customer: 'acme' });
    await queue('z', { customer: 'beta' });
    const line = async (id: string) => (await store.limitUse(id, both))?.rateLine;
    expect(await line('z')).toEqual({ place: 1, atLeast: false, slotAt: started + PERIOD_MS / 1000 });
    expect(await line('y')).toEqual({ place: 1, atLeast: false, slotAt: started + PERIOD_MS / 1000 });
    await h.elapse(PERIOD_MS + 100);
    expect(await pick({ rated: both })).toBe('z');
    // Once acme's place is free, y stands in line again: behind no one, as z has started.
    expect(await store.finishRun('x', 'w-1', { status: 'completed', outputJson: '1' })).toBe(true);
    expect((await line('y'))?.place).toBe(1);
  });

  it('tells the k-th held run of a key when its own slot comes, in the pick order', async () => {
    const rate: RunLimits = { rateLimit: { limit: 1, periodMs: PERIOD_MS, key: 'provider' } };
    const limits = { rated: rate };
    await serve(rate);
    for (const id of ['o0', 'o1', 'o2']) await queue(id, { provider: 'openai' });
    await queue('p0', { provider: 'anthropic' });
    await queue('p1', { provider: 'anthropic' });
    expect(await picks(3, limits)).toEqual(['o0', 'p0', null]);
    // Started later, of a higher priority: the pick takes it before o1 and o2, so it is first in line. (Ids sort as they were queued: SQLite's clock stands still.)
    await queue('o9', { provider: 'openai' }, 5);
    await h.elapse(2200);
    const s0 = (await startedAt('o0'))!;
    const p0 = (await startedAt('p0'))!;
    const line = async (id: string) => (await store.limitUse(id, rate))?.rateLine;
    expect(await line('o9')).toEqual({ place: 1, atLeast: false, slotAt: s0 + 10 });
    expect((await line('o1'))?.place).toBe(2);
    expect((await line('o1'))?.slotAt).toBeCloseTo(s0 + 20, 6);
    expect((await line('o2'))?.place).toBe(3);
    expect((await line('o2'))?.slotAt).toBeCloseTo(s0 + 30, 6);
    expect(await line('p1')).toEqual({ place: 1, atLeast: false, slotAt: p0 + 10 });
    // A running run stands in no line.
    expect(await line('o0')).toBeNull();

    const per = 'rate limit of 1 starts per 10 s for key openai';
    expectHeld(await reason('o9'), 'openai', 1, s0 + 10, (inS) => `${per}: next slot in ${inS} s`);
    expectHeld(
      await reason('o1'),
      'openai',
      2,
      s0 + 20,
      (inS) => `${per}: 2nd in line, its slot in ${inS} s at the earliest`,
    );
    expectHeld(
      await reason('o2'),
      'openai',
      3,
      s0 + 30,
      (inS) => `${per}: 3rd in line, its slot in ${inS} s at the earliest`,
    );
    if (backend.name === 'sqlite') {
      expect((await reason('o9')).reason?.message).toBe(`${per}: next slot in 7.8 s`);
      expect((await reason('o1')).reason?.message).toBe(`${per}: 2nd in line, its slot in 17.8 s at the earliest`);
      expect((await reason('o2')).reason?.message).toBe(`${per}: 3rd in line, its slot in 27.8 s at the earliest`);
    }

    // The slot comes when it said: o9 is taken then, and o1 moves up to first in line.
    await h.elapse(7900);
    expect(await picks(2, limits)).toEqual(['o9', 'p1']);
    expectHeld(
      await reason('o1'),
      'openai',
      1,
      (await startedAt('o9'))! + 10,
      (inS) => `${per}: next slot in ${inS} s`,
    );
  });

  it('says which places wait on a stored start (exact) and which on whole periods after', async () => {
    const rate: RunLimits = { rateLimit: { limit: 2, periodMs: PERIOD_MS, key: null } };
    const limits = { rated: rate };
    await serve(rate);
    for (const id of ['a0', 'a1', 'b0', 'b1', 'b2']) await queue(id, {});
    expect(await picks(1, limits)).toEqual(['a0']);
    await h.elapse(1000);
    expect(await picks(2, limits)).toEqual(['a1', null]);
    await h.elapse(1000);
    const [s0, s1] = [(await startedAt('a0'))!, (await startedAt('a1'))!];
    const per = 'rate limit of 2 starts per 10 s of workflow rated';
    expectHeld(await reason('b0'), '', 1, s0 + 10, (inS) => `${per}: next slot in ${inS} s`);
    expectHeld(await reason('b1'), '', 2, s1 + 10, (inS) => `${per}: 2nd in line, its slot in ${inS} s`);
    expectHeld(
      await reason('b2'),
      '',
      3,
      s0 + 20,
      (inS) => `${per}: 3rd in line, its slot in ${inS} s at the earliest`,
    );
    if (backend.name === 'sqlite')
      expect([
        (await reason('b0')).reason?.message,
        (await reason('b1')).reason?.message,
        (await reason('b2')).reason?.message,
      ]).toEqual([
        `${per}: next slot in 8.0 s`,
        `${per}: 2nd in line, its slot in 9.0 s`,
        `${per}: 3rd in line, its slot in 18.0 s at the earliest`,
      ]);
  });

  it('counts a hundred runs ahead at most, and says so of a run further back', async () => {
    const rate: RunLimits = { rateLimit: { limit: 1, periodMs: PERIOD_MS, key: 'provider' } };
    const limits = { rated: rate };
    await serve(rate);
    const id = (i: number) => `q${String(i).padStart(3, '0')}`;
    // Runs of another key between them are passed over, by their input's text or by their key.
    for (let i = 0; i <= 102; i++) {
      await queue(id(i), { provider: 'openai' });
      await queue(`${id(i)}-x`, { provider: i % 2 ? 'anthropic' : 'openai-eu' });
    }
    expect(await pick(limits)).toBe(id(0));
    const s0 = (await startedAt(id(0)))!;
    const line = async (i: number) => (await store.limitUse(id(i), rate))?.rateLine;
    expect(await line(100)).toMatchObject({ place: 100, atLeast: false });
    expect((await line(100))?.slotAt).toBeCloseTo(s0 + 1000, 6);
    expect(await line(101)).toMatchObject({ place: 101, atLeast: true });
    expect(await line(102)).toMatchObject({ place: 101, atLeast: true });
    expect((await line(102))?.slotAt).toBeCloseTo(s0 + 1010, 6);
    const per = 'rate limit of 1 starts per 10 s for key openai';
    expectHeld(
      await reason(id(102)),
      'openai',
      101,
      s0 + 1010,
      (inS) => `${per}: 101st or later in line, its slot in ${inS} s at the earliest`,
    );
    if (backend.name === 'sqlite')
      expect((await reason(id(100))).reason?.message).toBe(
        `${per}: 100th in line, its slot in 1000.0 s at the earliest`,
      );
  });
});
