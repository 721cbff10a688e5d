/**
 * The tag and metadata rules (lib/domain/run-tags.ts) at their edges: lengths, characters, counts, and the
 * `key=value` filter's one reading.
 */
import { describe, expect, it } from 'vitest';
import { metadataSchema, metaFilterSchema, runTagsProblem, tagSchema, tagsSchema } from '../../lib/domain/run-tags';

const problem = (
  schema: {
    safeParse(v: unknown): { success: boolean; error?: { issues: { path: PropertyKey[]; message: string }[] } };
  },
  value: unknown,
) => {
  const parsed = schema.safeParse(value);
  return parsed.success ? null : parsed.error!.issues.map((i) => `${i.path.join('.') || '-'}: ${i.message}`);
};

describe('the run tag rules', () => {
  it('takes short plain tags, keeps their case, and drops repeats', () => {
    for (const tag of ['a', 'env/prod', 'user:42', 'ops@team', 'v1.2_rc-3', 'A'.repeat(64)])
      expect(problem(tagSchema, tag), tag).toBeNull();
    expect(problem(tagSchema, '')?.[0]).toBe('-: must not be empty');
    expect(problem(tagSchema, 'a'.repeat(65))).toEqual(['-: must be at most 64 characters']);
    for (const tag of ['-a', 'a b', 'a\u0000', 'é', 'a=b', 'a,b'])
      expect(problem(tagSchema, tag), tag).toEqual([
        '-: letters, digits and . _ : / @ - only, starting with a letter or digit',
      ]);
    expect(tagsSchema.parse(['b', 'B', 'b'])).toEqual(['b', 'B']);
    const twenty = Array.from({ length: 20 }, (_, i) => `t${i}`);
    expect(problem(tagsSchema, [...twenty, 't0'])).toBeNull();
    expect(problem(tagsSchema, [...twenty, 'x'])).toEqual(['-: must be at most 20 tags']);
    expect(problem(tagsSchema, 'a')).toEqual(['-: must be a list of tags']);
  });

  it('takes metadata keys like tags without : / @, values of any text without control characters', () => {
    expect(problem(metadataSchema, { customer: 'Acme, Inc. = big', 'a.b_c-d': '' })).toBeNull();
    expect(problem(metadataSchema, { 'a:b': 'v', ok: 'v' })).toEqual([
      'a:b: letters, digits and . _ - only, starting with a letter or digit',
    ]);
    expect(problem(metadataSchema, { ok: 'x'.repeat(257), k: 'a\nb', n: 3 })).toEqual([
      'ok: must be at most 256 characters',
      'k: must not contain control characters',
      'n: must be text',
    ]);
    const keys = Object.fromEntries(Array.from({ length: 21 }, (_, i) => [`k${i}`, 'v']));
    expect(problem(metadataSchema, keys)).toEqual(['-: must have at most 20 keys']);
    expect(problem(metadataSchema, ['a'])).toEqual(['-: must be an object of text values']);
  });

  it('refuses a metadata key __proto__ by the key rule, where the record alone drops it unseen', () => {
    expect(problem(metadataSchema, JSON.parse('{"__proto__":"x","ok":"v"}'))).toEqual([
      '__proto__: letters, digits and . _ - only, starting with a letter or digit',
    ]);
  });

  it('refuses a metadata value no store keeps as given (an unpaired surrogate), once per value', () => {
    expect(problem(metadataSchema, { k: 'x\ud800y', nul: 'a\u0000', emoji: '\ud83d\ude00' })).toEqual([
      'k: must not contain an unpaired surrogate (it is not valid UTF-16, so it has no UTF-8 form to store)',
      'nul: must not contain control characters',
    ]);
  });

  it('reads a key=value filter at its first =', () => {
    expect(metaFilterSchema.parse('k=v=w')).toEqual({ key: 'k', value: 'v=w' });
    expect(metaFilterSchema.parse('k=')).toEqual({ key: 'k', value: '' });
    expect(problem(metaFilterSchema, 'k')).toEqual(['-: must be key=value']);
    expect(problem(metaFilterSchema, '=v')).toEqual(['-: key: must not be empty']);
    expect(problem(metaFilterSchema, 'a b=v')).toEqual([
      '-: key: letters, digits and . _ - only, starting with a letter or digit',
    ]);
  });

  it('says which per-run limit a change would pass', () => {
    expect(runTagsProblem(20, 20)).toBeUndefined();
    expect(runTagsProblem(21, 0)).toBe('tags: a run may have at most 20 tags, it would have 21');
    expect(runTagsProblem(0, 21)).toBe('metadata: a run may have at most 20 keys, it would have 21');
  });
});
