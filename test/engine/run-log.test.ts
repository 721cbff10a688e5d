/**
 * The worker's run-log writer (lib/engine/run-log.ts) over a real SQLite store, on a ManualClock: lines are
 * written in batches (never one transaction per line) FLUSH_MS after the first waits or at once when
 * MAX_WAITING wait; flush() and close() leave nothing waiting; while the store refuses, each run's newest
 * `keep` lines wait with a note saying how many went, and they are written once it answers again.
 */
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../lib/clock';
import { FLUSH_MS, MAX_WAITING, RunLogWriter } from '../../lib/engine/run-log';
import { StoreUnavailableError } from '../../lib/errors';
import type { LogStore, Store } from '../../lib/store/contract';
import { openSqliteStore } from '../../lib/store/sqlite';
import { tempDir } from '../support/tmp';

/** The real store, its appends counted and, while `refusing`, refused as an unreachable store refuses them. */
function counted(store: Store) {
  const calls: number[] = [];
  const gate = { refusing: false };
  const logs: LogStore = {
    appendRunLogs: async (lines, options) => {
      if (gate.refusing) throw new StoreUnavailableError('the store is down (test)', new Error('down'));
      calls.push(lines.length);
      await store.appendRunLogs(lines, options);
    },
    readRunLogs: (runId, options) => store.readRunLogs(runId, options),
  };
  return { logs, calls, gate };
}

function open() {
  const dir = tempDir('waybill-run-log-');
  const clock = new ManualClock();
  const store = openSqliteStore({ path: dir.file('w.db'), clock, synchronous: 'normal' });
  return { store, clock, ...counted(store), close: () => store.close() };
}

const texts = async (store: Store, runId: string) =>
  (await store.readRunLogs(runId, { afterSeq: 0, limit: 100_000 })).map((l) => l.line);

describe('the run log writer', () => {
  it('writes lines in batches: FLUSH_MS after the first waits, at once at MAX_WAITING, and all of them at flush', async () => {
    const h = open();
    const writer = new RunLogWriter(h.logs, { keep: 5000, clock: h.clock });
    const log = writer.forRun('r', 'w1', 3);
    for (let i = 0; i < 10; i++) log.write('stdout', `line ${i}`);
    // Nothing written yet: ten lines cost no transaction until the batch is due.
    expect(h.calls).toEqual([]);
    await h.clock.tick(FLUSH_MS - 1);
    expect(h.calls).toEqual([]);
    await h.clock.tick(1);
    await writer.flush();
    expect(h.calls).toEqual([10]);
    const [first] = await h.store.readRunLogs('r', { limit: 1 });
    expect(first).toMatchObject({ seq: 10, stream: 'stdout', line: 'line 9', workerId: 'w1', attempt: 3 });
    // When the line was read, not when its batch was written.
    expect(first!.at).toBeCloseTo((h.clock.now() - FLUSH_MS) / 1000, 6);

    // A program printing fast: a batch starts at MAX_WAITING, without waiting for the timer.
    for (let i = 10; i < 10 + MAX_WAITING + 3; i++) log.write(i % 2 ? 'stderr' : 'stdout', `line ${i}`);
    await writer.flush();
    expect(h.calls).toEqual([10, MAX_WAITING, 3]);
    expect(await texts(h.store, 'r')).toEqual(Array.from({ length: 10 + MAX_WAITING + 3 }, (_, i) => `line ${i}`));
    // close() writes what waits, with no timer left behind.
    log.write('worker', 'program exited with 0');
    await writer.close();
    expect(h.calls).toEqual([10, MAX_WAITING, 3, 1]);
    expect((await texts(h.store, 'r')).at(-1)).toBe('program exited with 0');
    await h.close();
  });

  it('keeps the lines a refusing store did not take, each run its newest `keep`, and writes them when it answers', async () => {
    const h = open();
    const writer = new RunLogWriter(h.logs, { keep: 100, clock: h.clock });
    const a = writer.forRun('a', 'w1', 1);
    const b = writer.forRun('b', 'w1', 1);
    h.gate.refusing = true;
    for (let i = 0; i < 1000; i++) a.write('stdout', `a ${i}`);
    for (let i = 0; i < 7; i++) b.write('stdout', `b ${i}`);
    await writer.flush();
    expect(h.calls).toEqual([]);
    h.gate.refusing = false;
    await writer.flush();
    // a: a note, then its newest 99 lines (the store keeps 100); b: all seven, untouched by a's trim.
    const kept = await texts(h.store, 'a');
    expect(kept).toEqual([
      '901 earlier lines were not stored: the program printed them faster than the store took them (the newest 100 are kept)',
      ...Array.from({ length: 99 }, (_, i) => `a ${901 + i}`),
    ]);
    expect(await texts(h.store, 'b')).toEqual(Array.from({ length: 7 }, (_, i) => `b ${i}`));
    // The seqs say where the run stands: 100 lines stored, in one run of seqs from 1.
    expect((await h.store.readRunLogs('a', { afterSeq: 0, limit: 1000 })).map((l) => l.seq)).toEqual(
      Array.from({ length: 100 }, (_, i) => i + 1),
    );
    await writer.close();
    await h.close();
  });

  it('tries a refused batch again by itself, and says at close what it could not store', async () => {
    const h = open();
    const warnings: { msg: string; lines?: number }[] = [];
    const log = {
      debug: () => undefined,
      info: () => undefined,
      warn: (msg: string, fields?: { lines?: number }) => warnings.push({ msg, lines: fields?.lines }),
      error: () => undefined,
      child() {
        return this;
      },
    };
    const writer = new RunLogWriter(h.logs, { keep: 100, clock: h.clock, log });
    const r = writer.forRun('r', 'w1', 1);
    h.gate.refusing = true;
    r.write('stdout', 'one');
    await h.clock.tick(FLUSH_MS);
    await writer.flush();
    expect(warnings.map((w) => w.msg)).toEqual(['could not store run log lines; kept to try again']);
    h.gate.refusing = false;
    // The retry comes by itself, later than a batch would: the store was down.
    await h.clock.tick(2000);
    await writer.flush();
    expect(await texts(h.store, 'r')).toEqual(['one']);

    h.gate.refusing = true;
    r.write('stdout', 'two');
    await writer.close();
    expect(warnings.at(-1)).toEqual({
      msg: 'run log lines not stored: the store refused them until the worker stopped',
      lines: 1,
    });
    expect(await texts(h.store, 'r')).toEqual(['one']);
    await h.close();
  });
});
