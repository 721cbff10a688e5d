/**
 * The group-commit queue (lib/store/shared/group-commit.ts) on its own, over a writer that records every batch it is
 * given. Real timers: what is asserted is which requests went together and in which order, never how long
 * anything took.
 */
import { describe, expect, it } from 'vitest';
import { type Answer, groupCommit, type Settled } from '../../lib/store/shared/group-commit';

/** A writer that answers each request with itself doubled, recording the batches; `gate` holds it open. */
function recorder(options: { fail?: (n: number) => unknown; gate?: () => Promise<void> } = {}) {
  const batches: number[][] = [];
  let open = 0;
  let mostOpen = 0;
  const write = async (requests: number[]): Promise<Settled<number>[]> => {
    batches.push([...requests]);
    open += 1;
    mostOpen = Math.max(mostOpen, open);
    try {
      if (options.gate) await options.gate();
      return requests.map((n) => {
        const error = options.fail?.(n);
        return error === undefined ? { ok: true, value: n * 2 } : { ok: false, error };
      });
    } finally {
      open -= 1;
    }
  };
  return { write, batches, mostOpen: () => mostOpen };
}

/** A promise the test resolves: a batch that stays in flight until told. */
function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

describe('groupCommit', () => {
  it('writes calls made in the same turn as one batch, in the order they were made', async () => {
    const r = recorder();
    const send = groupCommit(r.write);
    const answers = await Promise.all([1, 2, 3, 4, 5].map((n) => send(n)));
    expect(answers).toEqual([2, 4, 6, 8, 10]);
    expect(r.batches).toEqual([[1, 2, 3, 4, 5]]);
  });

  it('a lone call waits for no company: it is written within the turn it was made in', async () => {
    const r = recorder();
    const send = groupCommit(r.write);
    const answer = send(7);
    // An immediate queued after the call runs after the flush the call queued: the batch is written by then.
    await turn();
    expect(r.batches).toEqual([[7]]);
    expect(await answer).toBe(14);
    // And again when idle: every lone call is its own batch, none held back for the next.
    expect(await send(8)).toBe(16);
    expect(r.batches).toEqual([[7], [8]]);
  });

  it('loops woken by one batch reach the next one together: 8 loops of 10 steps are 10 batches of 8', async () => {
    const r = recorder();
    const send = groupCommit(r.write);
    const loop = async (id: number) => {
      for (let step = 0; step < 10; step++) {
        await send(id * 100 + step);
        // The work between two commits of a loop: several hops of promise continuations, no macrotask.
        await Promise.resolve();
        await Promise.resolve().then(() => undefined);
      }
    };
    await Promise.all(Array.from({ length: 8 }, (_, id) => loop(id)));
    expect(r.batches.length).toBe(10);
    r.batches.forEach((batch, step) => {
      expect(batch).toEqual(Array.from({ length: 8 }, (_, id) => id * 100 + step));
    });
  });

  it('what queues while a batch is in flight goes when it finishes, with the requests its answers wake', async () => {
    const gates = [deferred(), deferred()];
    let opened = 0;
    const r = recorder({ gate: () => gates[opened++]!.promise });
    const send = groupCommit(r.write);
    // A run woken by its answer sends its next request at once, as a loop's next step does.
    const first = send(1).then((n) => send(n + 10));
    await turn();
    expect(r.batches).toEqual([[1]]);
    const later = [send(2), send(3), send(4)];
    await turn();
    await turn();
    // Held while the first batch is written: one at a time (maxInFlight 1).
    expect(r.batches).toEqual([[1]]);
    gates[0]!.resolve();
    await turn();
    await turn();
    // Sent at the end of the turn the first batch finished in, so the woken run's request rides with them.
    expect(r.batches).toEqual([[1], [2, 3, 4, 12]]);
    gates[1]!.resolve();
    expect(await Promise.all(later)).toEqual([4, 6, 8]);
    expect(await first).toBe(24);
    expect(r.mostOpen()).toBe(1);
  });

  it('maxBatch splits a long queue into batches of at most that many, in order', async () => {
    const r = recorder();
    const send = groupCommit(r.write, { maxBatch: 3 });
    const answers = await Promise.all([1, 2, 3, 4, 5, 6, 7].map((n) => send(n)));
    expect(answers).toEqual([2, 4, 6, 8, 10, 12, 14]);
    expect(r.batches).toEqual([[1, 2, 3], [4, 5, 6], [7]]);
  });

  it('maxInFlight lets that many batches be written at once, and no more', async () => {
    const gate = deferred();
    const r = recorder({ gate: () => gate.promise });
    const send = groupCommit(r.write, { maxBatch: 2, maxInFlight: 2 });
    const answers = Promise.all([1, 2, 3, 4, 5, 6].map((n) => send(n)));
    await turn();
    await turn();
    expect(r.batches).toEqual([
      [1, 2],
      [3, 4],
    ]);
    gate.resolve();
    expect(await answers).toEqual([2, 4, 6, 8, 10, 12]);
    expect(r.batches).toEqual([
      [1, 2],
      [3, 4],
      [5, 6],
    ]);
    expect(r.mostOpen()).toBe(2);
  });

  it('a request refused rejects only its own caller; its neighbours in the batch get their answers', async () => {
    const refused = new Error('refused: 3');
    const r = recorder({ fail: (n) => (n === 3 ? refused : undefined) });
    const send = groupCommit(r.write);
    const answers = await Promise.allSettled([1, 2, 3, 4].map((n) => send(n)));
    expect(r.batches).toEqual([[1, 2, 3, 4]]);
    expect(answers).toEqual([
      { status: 'fulfilled', value: 2 },
      { status: 'fulfilled', value: 4 },
      { status: 'rejected', reason: refused },
      { status: 'fulfilled', value: 8 },
    ]);
  });

  it('an answer still to come (a split batch) answers its own caller when it settles, and frees the batch slot at once', async () => {
    const slow = deferred();
    const batches: number[][] = [];
    const send = groupCommit(
      async (requests: number[]): Promise<Answer<number>[]> => {
        batches.push([...requests]);
        // Request 2 is sent on alone and waits (for a row lock, say); the others are answered now.
        return requests.map((n) =>
          n === 2 ? slow.promise.then(() => ({ ok: true, value: 20 })) : { ok: true, value: n * 2 },
        );
      },
      { maxInFlight: 1 },
    );
    let twoAnswered = false;
    const two = send(2).then((value) => {
      twoAnswered = true;
      return value;
    });
    const others = [1, 3].map((n) => send(n));
    expect(await Promise.all(others)).toEqual([2, 6]);
    expect(twoAnswered).toBe(false);
    // The one slot is free while 2 waits: the next call is written as a batch of its own and answered.
    expect(await send(4)).toBe(8);
    expect(batches).toEqual([[2, 1, 3], [4]]);
    expect(twoAnswered).toBe(false);
    slow.resolve();
    expect(await two).toBe(20);
  });

  it('a batch that fails as a whole rejects every caller in it with its error, and the next batch is written', async () => {
    const busy = new Error('busy');
    let calls = 0;
    const batches: number[][] = [];
    const send = groupCommit(async (requests: number[]): Promise<Settled<number>[]> => {
      batches.push(requests);
      if (calls++ === 0) throw busy;
      return requests.map((n) => ({ ok: true, value: n }));
    });
    const failed = await Promise.allSettled([1, 2, 3].map((n) => send(n)));
    expect(failed).toEqual([1, 2, 3].map(() => ({ status: 'rejected', reason: busy })));
    expect(await Promise.all([4, 5].map((n) => send(n)))).toEqual([4, 5]);
    expect(batches).toEqual([
      [1, 2, 3],
      [4, 5],
    ]);
  });

  it('a writer that answers the wrong number of requests fails the whole batch rather than misanswer one', async () => {
    const send = groupCommit(
      async (requests: number[]): Promise<Settled<number>[]> => requests.slice(1).map((n) => ({ ok: true, value: n })),
    );
    const answers = await Promise.allSettled([1, 2].map((n) => send(n)));
    for (const answer of answers) {
      expect(answer.status).toBe('rejected');
      expect(String((answer as PromiseRejectedResult).reason)).toContain('1 answers for 2 requests');
    }
  });

  it('a writer that throws before its first await is one failed batch, not an unhandled error', async () => {
    const boom = new Error('boom');
    const send = groupCommit((_requests: number[]): Promise<Settled<number>[]> => {
      throw boom;
    });
    await expect(send(1)).rejects.toBe(boom);
  });
});
