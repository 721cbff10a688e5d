/**
 * heldReason's words for a run behind others for a free place under its concurrency key (lib/control/queued.ts),
 * from a use the store read: the store's side is test/control/queued-list.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { heldReason } from '../../lib/control/queued';
import { LINE_COUNTED } from '../../lib/domain/run-limits';

const limits = (limit: number) => ({ concurrency: { limit, key: 'customer' } });
const use = (running: number, ahead: number, atLeast = false) => ({
  nowS: 1_000,
  concurrency: { key: 'acme', running },
  rateLine: null,
  placeLine: { ahead, atLeast },
});

describe('a run behind others for a free place', () => {
  it('is held while as many runs as there are free places are ahead of it, and told a slot is free after', () => {
    expect(heldReason('wf', limits(3), use(1, 2))).toMatchObject({
      kind: 'held',
      place: 3,
      message:
        '1 of 3 runs for key acme are running; 2 queued runs of the key are ahead of it (highest priority first, then the oldest)',
    });
    expect(heldReason('wf', limits(3), use(1, 1))).toBeNull();
  });

  it('is held when more runs are ahead than are counted, however many places are free', () => {
    expect(heldReason('wf', limits(500), use(0, LINE_COUNTED, true))).toMatchObject({
      kind: 'held',
      place: LINE_COUNTED + 1,
      message: `0 of 500 runs for key acme are running; ${LINE_COUNTED} or more queued runs of the key are ahead of it (highest priority first, then the oldest)`,
    });
    expect(heldReason('wf', limits(500), use(0, LINE_COUNTED - 1))).toBeNull();
  });
});
