/**
 * Run logs on every backend (lib/store/contract/logs.ts): a run's lines are numbered from 1 without gaps in the
 * order they were appended, read as a tail or after a seq; each run keeps exactly its newest K; a line is cut
 * to its bound with a marker; two store connections appending to one run at once never take the same seq.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { RunLogInput, Store } from '../../lib/store/contract';
import { MAX_LOG_LINE_CHARS } from '../../lib/store/shared/log-lines';
import { backends, type StoreHandle } from '../support/backends';

const list = await backends();

const lines = (runId: string, from: number, n: number, stream: RunLogInput['stream'] = 'stdout'): RunLogInput[] =>
  Array.from({ length: n }, (_, i) => ({ runId, at: 1_700_000_000 + from + i, stream, line: `line ${from + i}` }));

describe.each(list)('run logs on $name', (backend) => {
  let h: StoreHandle;
  let store: Store;

  beforeEach(async () => {
    h = await backend.open();
    store = h.store;
  });
  afterEach(() => h.close());

  it("numbers each run's lines from 1 in append order, and reads the tail or the lines after a seq", async () => {
    expect(await store.readRunLogs('nobody', { limit: 10 })).toEqual([]);
    // Two runs interleaved in one batch, as a worker with two programs flushes them.
    await store.appendRunLogs(
      [
        { runId: 'a', at: 1.5, stream: 'worker', line: 'started', workerId: 'w1', attempt: 2 },
        { runId: 'b', at: 1.6, stream: 'stdout', line: 'b first' },
        { runId: 'a', at: 1.7, stream: 'stderr', line: 'oops', workerId: 'w1', attempt: 2 },
      ],
      { keep: 100 },
    );
    await store.appendRunLogs(lines('a', 0, 3), { keep: 100 });
    const a = await store.readRunLogs('a', { limit: 100 });
    expect(a.map((l) => [l.seq, l.stream, l.line])).toEqual([
      [1, 'worker', 'started'],
      [2, 'stderr', 'oops'],
      [3, 'stdout', 'line 0'],
      [4, 'stdout', 'line 1'],
      [5, 'stdout', 'line 2'],
    ]);
    expect(a[0]).toEqual({
      runId: 'a',
      seq: 1,
      at: 1.5,
      stream: 'worker',
      line: 'started',
      workerId: 'w1',
      attempt: 2,
    });
    expect(a[2]).toMatchObject({ workerId: null, attempt: null });
    expect(await store.readRunLogs('b', { limit: 100 })).toEqual([
      { runId: 'b', seq: 1, at: 1.6, stream: 'stdout', line: 'b first', workerId: null, attempt: null },
    ]);
    // The tail: the last `limit`, oldest first. After a seq: the first `limit` after it.
    expect((await store.readRunLogs('a', { limit: 2 })).map((l) => l.seq)).toEqual([4, 5]);
    expect((await store.readRunLogs('a', { afterSeq: 1, limit: 2 })).map((l) => l.seq)).toEqual([2, 3]);
    expect((await store.readRunLogs('a', { afterSeq: 5, limit: 2 })).map((l) => l.seq)).toEqual([]);
    expect((await store.readRunLogs('a', { afterSeq: 0, limit: 100 })).length).toBe(5);
    // Another connection (a dashboard on another machine) reads the same lines.
    const other = await h.reopen();
    expect(await other.readRunLogs('a', { limit: 100 })).toEqual(a);
  });

  it('keeps exactly the newest K lines of a run, whether they come in one batch or many', async () => {
    const K = 200;
    // K + 500 in batches of 70, then K + 500 in one batch: the run holds the newest K, seqs K+... on.
    for (let from = 0; from < K + 500; from += 70)
      await store.appendRunLogs(lines('many', from, Math.min(70, K + 500 - from)), { keep: K });
    let kept = await store.readRunLogs('many', { afterSeq: 0, limit: 10_000 });
    expect(kept.length).toBe(K);
    expect(kept[0]).toMatchObject({ seq: 501, line: 'line 500' });
    expect(kept.at(-1)).toMatchObject({ seq: K + 500, line: `line ${K + 499}` });
    expect(kept.map((l) => l.seq)).toEqual(Array.from({ length: K }, (_, i) => 501 + i));

    await store.appendRunLogs(lines('one', 0, K + 500), { keep: K });
    kept = await store.readRunLogs('one', { afterSeq: 0, limit: 10_000 });
    expect(kept.map((l) => l.seq)).toEqual(Array.from({ length: K }, (_, i) => 501 + i));
    expect(kept[0]!.line).toBe('line 500');
    // The next line continues the numbering: a follower that saw seq K+500 asks for what is after it.
    await store.appendRunLogs(lines('one', K + 500, 1), { keep: K });
    expect(await store.readRunLogs('one', { afterSeq: K + 500, limit: 10 })).toEqual([
      expect.objectContaining({ seq: K + 501, line: `line ${K + 500}` }),
    ]);
    expect((await store.readRunLogs('one', { afterSeq: 0, limit: 10_000 })).length).toBe(K);
    // A run's bound is its own: the other run was not touched.
    expect((await store.readRunLogs('many', { afterSeq: 0, limit: 10_000 })).length).toBe(K);
  });

  it('cuts a long line to its bound with a marker, flattens line breaks, and stores NUL as U+FFFD', async () => {
    const long = `${'x'.repeat(10_000)}${'y'.repeat(10_000)}`;
    // An emoji (two UTF-16 units) where the cut falls is left out whole, not split in half.
    const total = 9000;
    const marker = ` … [cut: ${total.toLocaleString('en-US')} characters in all]`;
    const end = MAX_LOG_LINE_CHARS - marker.length;
    const emoji = `${'x'.repeat(end - 1)}😀${'y'.repeat(total - end - 1)}`;
    await store.appendRunLogs(
      [
        { runId: 'r', at: 1, stream: 'stdout', line: long },
        { runId: 'r', at: 1, stream: 'stdout', line: emoji },
        { runId: 'r', at: 1, stream: 'stdout', line: 'two\nlines\r\nhere' },
        { runId: 'r', at: 1, stream: 'stderr', line: 'nul\0byte' },
        { runId: 'r', at: 1, stream: 'stdout', line: 'x'.repeat(MAX_LOG_LINE_CHARS) },
      ],
      { keep: 10 },
    );
    const [cut, split, flat, nul, exact] = await store.readRunLogs('r', { limit: 10 });
    expect(cut!.line.length).toBe(MAX_LOG_LINE_CHARS);
    expect(cut!.line).toMatch(/^x+ … \[cut: 20,000 characters in all\]$/);
    expect(split!.line).toBe(`${'x'.repeat(end - 1)}${marker}`);
    expect(flat!.line).toBe('two lines here');
    expect(nul!.line).toBe('nul\ufffdbyte');
    expect(exact!.line).toBe('x'.repeat(MAX_LOG_LINE_CHARS));
  });

  it('gives two connections appending to one run at once every seq once, each keeping its own order', async () => {
    const other = await h.reopen();
    const writer = async (s: Store, name: string) => {
      for (let i = 0; i < 20; i++)
        await s.appendRunLogs(
          Array.from({ length: 5 }, (_, j) => ({
            runId: 'shared',
            at: 1,
            stream: 'stdout' as const,
            line: `${name} ${i * 5 + j}`,
          })),
          { keep: 1000 },
        );
    };
    await Promise.all([writer(store, 'p'), writer(other, 'q')]);
    const all = await store.readRunLogs('shared', { afterSeq: 0, limit: 1000 });
    expect(all.map((l) => l.seq)).toEqual(Array.from({ length: 200 }, (_, i) => i + 1));
    for (const name of ['p', 'q'])
      expect(all.filter((l) => l.line.startsWith(`${name} `)).map((l) => l.line)).toEqual(
        Array.from({ length: 100 }, (_, i) => `${name} ${i}`),
      );
  });

  it('refuses a keep outside 1 to 100000 and writes nothing', async () => {
    for (const keep of [0, -1, 1.5, 100_001, Number.NaN])
      await expect(store.appendRunLogs(lines('bad', 0, 1), { keep })).rejects.toThrow(/keep must be a whole number/);
    expect(await store.readRunLogs('bad', { limit: 10 })).toEqual([]);
  });
});
