/**
 * The one rule for text a store keeps (lib/domain/text.ts) and a use of it: a cursor whose strings no store
 * could hold decodes as no cursor of ours, like any other forged one.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { claimsCursor, committedCursor, runsCursor } from '../../lib/domain/cursor';
import { jsonTextProblems, storableText, textProblem } from '../../lib/domain/text';

const forged = (value: unknown[]) => Buffer.from(JSON.stringify(value), 'utf8').toString('base64url');

describe('storable text', () => {
  it('takes any text but a NUL or an unpaired surrogate', () => {
    for (const text of ['', 'plain', 'tab\tand\nline', 'é 漢字', '\ud83d\ude00', '\ufffd'])
      expect(textProblem(text), JSON.stringify(text)).toBeUndefined();
    expect(textProblem('a\u0000b')).toBe('must not contain NUL characters');
    for (const text of ['\ud800', 'x\udc00', '\ude00\ud83d', 'a\ud83d'])
      expect(textProblem(text), JSON.stringify(text)).toMatch(/^must not contain an unpaired surrogate/);
  });

  it('as a refinement, stops the checks after it', () => {
    const url = z
      .string()
      .superRefine(storableText)
      .refine((v) => v.startsWith('https://'), 'must be a URL');
    expect(url.safeParse('https://a\u0000').error?.issues.map((i) => i.message)).toEqual([
      'must not contain NUL characters',
    ]);
  });

  it('keeps a forged cursor holding a NUL or an unpaired surrogate from decoding, as any forged cursor', () => {
    expect(runsCursor.decode(runsCursor.encode({ updatedAt: 1.5, id: 'r é' }))).toEqual({ updatedAt: 1.5, id: 'r é' });
    expect(committedCursor.decode(committedCursor.encode('r:step:0'))).toBe('r:step:0');
    expect(claimsCursor.decode(claimsCursor.encode({ claimedAt: 2, idemKey: 'k' }))).toEqual({
      claimedAt: 2,
      idemKey: 'k',
    });
    for (const bad of ['a\u0000', 'a\ud800']) {
      expect(runsCursor.decode(forged([1, bad]))).toBeNull();
      expect(committedCursor.decode(forged(['k', bad]))).toBeNull();
      expect(claimsCursor.decode(forged(['c', 1, bad]))).toBeNull();
    }
  });

  it('finds every string and field name of a JSON value no store can keep, by its path, in document order', () => {
    expect(jsonTextProblems({ a: 'ok', b: [1, 'é', { c: null }], d: true })).toEqual([]);
    const nul = 'must not contain NUL characters';
    const lone = 'must not contain an unpaired surrogate (it is not valid UTF-16, so it has no UTF-8 form to store)';
    expect(
      jsonTextProblems({
        customer: 'acme\u0000',
        provider: { name: 'x\ud800' },
        list: ['fine', '\u0000'],
        meta: { 'k\u0000': 1, ok: 'y' },
      }),
    ).toEqual([
      { path: ['customer'], message: nul },
      { path: ['provider', 'name'], message: lone },
      { path: ['list', 1], message: nul },
      { path: ['meta'], message: `field name "k\\u0000" ${nul}` },
    ]);
    expect(jsonTextProblems('\u0000')).toEqual([{ path: [], message: nul }]);
    // At most ten named; nesting deeper than the call stack is walked all the same.
    expect(jsonTextProblems(Array.from({ length: 50 }, () => '\u0000'))).toHaveLength(10);
    let deep: unknown = '\u0000';
    for (let i = 0; i < 20_000; i++) deep = [deep];
    expect(jsonTextProblems(deep)[0]?.message).toBe(nul);
  });
});
