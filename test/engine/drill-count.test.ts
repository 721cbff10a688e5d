/**
 * How the drill judges a step that ran more than once, from the receiver's own lines: run again after a killed
 * worker's delivery is the in-doubt window its key closed; anything else is a side effect run twice.
 */
import { describe, expect, it } from 'vitest';
import { reexecutions } from '../../lib/engine/drill';
import type { Delivery } from '../../lib/engine/workflows/outbox';

const line = (key: string, worker: string, status: Delivery['status'] = 'delivered'): Delivery => ({
  key,
  step: 0,
  worker,
  pid: 1,
  time: 0,
  status,
});

describe('the drill’s count of steps run again', () => {
  it('counts nothing when every key was executed once', () => {
    expect(reexecutions([line('a', 'w0'), line('b', 'w1')], new Set(['w0']))).toEqual({
      inDoubt: 0,
      unexplained: 0,
      refused: 0,
    });
  });

  it('counts a step run again after a killed worker delivered it, and refused by key, as in doubt', () => {
    const lines = [line('a', 'w0'), line('b', 'w0'), line('b', 'w1', 'duplicate'), line('c', 'w1')];
    expect(reexecutions(lines, new Set(['w0']))).toEqual({ inDoubt: 1, unexplained: 0, refused: 1 });
  });

  it('counts a step run again after a live worker delivered it as executed twice, though refused', () => {
    const lines = [line('a', 'w0'), line('a', 'w1', 'duplicate')];
    expect(reexecutions(lines, new Set(['w2']))).toEqual({ inDoubt: 0, unexplained: 1, refused: 1 });
  });

  it('counts a key the receiver delivered twice as executed twice, whoever was killed', () => {
    const lines = [line('a', 'w0'), line('a', 'w1')];
    expect(reexecutions(lines, new Set(['w0']))).toEqual({ inDoubt: 0, unexplained: 1, refused: 0 });
  });

  it('needs every earlier execution to be a killed worker’s', () => {
    const lines = [line('a', 'w0'), line('a', 'w1', 'duplicate'), line('a', 'w2', 'duplicate')];
    expect(reexecutions(lines, new Set(['w0']))).toEqual({ inDoubt: 0, unexplained: 2, refused: 2 });
    expect(reexecutions(lines, new Set(['w0', 'w1']))).toEqual({ inDoubt: 2, unexplained: 0, refused: 2 });
  });
});
