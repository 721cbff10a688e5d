/**
 * Step streams on every backend (lib/store/contract/step-streams.ts): chunks read back in seq order, the
 * newest attempt's only; seq 0 starts an attempt over (a rerun's attempt 1), a chunk written again replaces
 * itself, and a chunk out of bounds is refused with nothing written.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { MAX_STREAM_CHUNK_CHARS, type Store } from '../../lib/store/contract';
import { backends, type StoreHandle } from '../support/backends';

const list = await backends();

describe.each(list)('step streams on $name', (backend) => {
  let h: StoreHandle;
  let store: Store;

  beforeEach(async () => {
    h = await backend.open();
    store = h.store;
  });
  afterEach(() => h.close());

  const put = (attempt: number, seq: number, text: string, step = 2, runId = 'r1') =>
    store.appendStepStream({ runId, step, attempt, seq, text });

  it("reads the newest attempt's chunks in seq order, per step and run", async () => {
    expect(await store.readStepStream('r1', 2)).toBeNull();
    await put(1, 0, 'Hel');
    await put(1, 1, 'lo');
    await put(1, 3, '!');
    await put(1, 2, ', world');
    await put(1, 0, 'other step', 3);
    await put(1, 0, 'other run', 2, 'r2');
    expect(await store.readStepStream('r1', 2)).toEqual({ attempt: 1, chunks: ['Hel', 'lo', ', world', '!'] });
    // The retry streams again: only its text is shown, never the first attempt's beside it.
    await put(2, 0, 'Try ');
    await put(2, 1, 'two');
    expect(await store.readStepStream('r1', 2)).toEqual({ attempt: 2, chunks: ['Try ', 'two'] });
    expect(await store.readStepStream('r1', 3)).toEqual({ attempt: 1, chunks: ['other step'] });
    expect(await store.readStepStream('r2', 2)).toEqual({ attempt: 1, chunks: ['other run'] });
  });

  it('starts an attempt over at seq 0, and replaces a chunk written again under its seq', async () => {
    await put(1, 0, 'a');
    await put(1, 1, 'b');
    await put(1, 2, 'c');
    await put(1, 1, 'B');
    expect((await store.readStepStream('r1', 2))?.chunks).toEqual(['a', 'B', 'c']);
    // A rerun executes the step again from its attempt 1: the earlier execution's chunks go.
    await put(1, 0, 'again');
    expect(await store.readStepStream('r1', 2)).toEqual({ attempt: 1, chunks: ['again'] });
  });

  it('refuses a chunk out of bounds and writes nothing', async () => {
    await expect(put(1, 0, 'x'.repeat(MAX_STREAM_CHUNK_CHARS + 1))).rejects.toThrow(
      `stream chunk 0 of step 2 of run "r1": text must be a string of at most ${MAX_STREAM_CHUNK_CHARS.toLocaleString('en-US')} characters`,
    );
    await expect(put(0, 0, 'x')).rejects.toThrow('attempt must be a whole number ≥ 1');
    await expect(put(1, -1, 'x')).rejects.toThrow('seq must be a whole number from 0 to 1,000,000');
    await expect(put(1, 0, 'a\u0000b')).rejects.toThrow('text must not contain NUL characters');
    expect(await store.readStepStream('r1', 2)).toBeNull();
    await put(1, 0, 'x'.repeat(MAX_STREAM_CHUNK_CHARS));
    expect((await store.readStepStream('r1', 2))?.chunks[0]).toHaveLength(MAX_STREAM_CHUNK_CHARS);
  });
});
