/**
 * The limits a workflow may declare (lib/domain/run-limits.ts): defineWorkflow refuses a bad one naming the field,
 * resolves periods to milliseconds, and a worker's registry hands the pick only the workflows that hold back.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { limitKeyOf, periodText, rateSlot } from '../../lib/domain/run-limits';
import { defineWorkflow, limitsOf, WorkflowRegistry } from '../../lib/engine/workflow';

const base = { input: z.object({}), run: async () => null };

describe('workflow limits', () => {
  it('refuses a bad declaration, naming the field', () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ concurrency: { limit: 0 } }, 'workflow "a": concurrency.limit must be at least 1'],
      [{ concurrency: { limit: 2, key: 'a b' } }, 'workflow "a": concurrency.key must be a path into the input'],
      [{ concurrency: { limit: 2, extra: 1 } }, 'workflow "a": concurrency'],
      [{ rateLimit: { limit: 5, period: 'day' } }, 'workflow "a": rateLimit.period'],
      [{ rateLimit: { limit: 5, period: 10 } }, 'workflow "a": rateLimit.period must be at least 1000 ms'],
      [{ priority: 2.5 }, 'workflow "a": priority must be a whole number'],
      [{ priority: -1001 }, 'workflow "a": priority must be at least -1000'],
    ];
    for (const [fields, message] of cases)
      expect(() => defineWorkflow({ name: 'a', ...base, ...fields }), JSON.stringify(fields)).toThrow(message);
  });

  it('resolves periods and hands the pick only the workflows that hold runs back', () => {
    const limited = defineWorkflow({
      name: 'limited',
      ...base,
      concurrency: { limit: 3, key: 'customer' },
      rateLimit: { limit: 10, period: 'minute' },
    });
    const ranked = defineWorkflow({ name: 'ranked', ...base, priority: 5 });
    const plain = defineWorkflow({ name: 'plain', ...base });
    expect(limitsOf(limited)).toEqual({
      concurrency: { limit: 3, key: 'customer' },
      rateLimit: { limit: 10, periodMs: 60_000, key: null },
    });
    expect(limitsOf(ranked)).toEqual({ priority: 5 });
    expect(new WorkflowRegistry([limited, ranked, plain]).limits()).toEqual({ limited: limitsOf(limited) });
    expect(new WorkflowRegistry([limited]).check('limited', {})).toMatchObject({ ok: true, priority: undefined });
    expect(new WorkflowRegistry([ranked]).check('ranked', {})).toMatchObject({ ok: true, priority: 5 });
    expect([periodText(1000), periodText(60_000), periodText(120_000), periodText(1500)]).toEqual([
      'second',
      'minute',
      '2 min',
      '1.5 s',
    ]);
  });

  it('reads a key from the input as the store does', () => {
    expect(limitKeyOf('{"a":{"b":"x"}}', 'a.b')).toBe('x');
    expect(limitKeyOf('{"a":7}', 'a')).toBe('7');
    expect(limitKeyOf('{"a":false}', 'a')).toBe('false');
    expect(limitKeyOf('{"a":[1]}', 'a')).toBe('');
    expect(limitKeyOf('{}', 'a.b')).toBe('');
    expect(limitKeyOf('{"a":1}', null)).toBe('');
  });

  it('says which stored start the k-th run in line waits on, then whole periods', () => {
    // 1 start per period, 1 in the window: the first in line waits on it, the second a period more.
    expect(rateSlot(1, 1, 1)).toEqual({ nth: 1, periods: 0 });
    expect(rateSlot(1, 1, 2)).toEqual({ nth: 1, periods: 1 });
    expect(rateSlot(1, 1, 3)).toEqual({ nth: 1, periods: 2 });
    // 5 per period, all 5 taken: the k-th in line waits on the k-th oldest, the 6th on the oldest a period more.
    expect([1, 3, 5, 6, 10, 11].map((place) => rateSlot(5, 5, place))).toEqual([
      { nth: 1, periods: 0 },
      { nth: 3, periods: 0 },
      { nth: 5, periods: 0 },
      { nth: 1, periods: 1 },
      { nth: 5, periods: 1 },
      { nth: 1, periods: 2 },
    ]);
    // 3 of 5 taken: two start now, the third waits on the oldest; the 6th and 7th on the two that start now.
    expect([1, 2, 3, 5, 6, 7, 8].map((place) => rateSlot(5, 3, place))).toEqual([
      { nth: null, periods: 0 },
      { nth: null, periods: 0 },
      { nth: 1, periods: 0 },
      { nth: 3, periods: 0 },
      { nth: null, periods: 1 },
      { nth: null, periods: 1 },
      { nth: 1, periods: 1 },
    ]);
    // More starts in the window than the limit (a limit lowered since): the first waits until only 4 are left.
    expect(rateSlot(5, 7, 1)).toEqual({ nth: 3, periods: 0 });
  });
});
