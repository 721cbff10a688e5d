/**
 * What a run's tags and metadata may be, for every way they are set (a start from the dashboard, the API or the
 * CLI, ctx.setTags and ctx.setMetadata inside a run) and filtered by (the runs list, bulk by filter):
 *
 * - a tag: 1–64 of letters, digits and `. _ : / @ -`, starting with a letter or digit (`user:42`,
 *   `env/prod`), case kept; at most 20 on a run;
 * - a metadata key: 1–64 of letters, digits and `. _ -`, starting with a letter or digit (no `=`, so
 *   `key=value` reads back one way); a value: up to 256 characters of text without control characters or
 *   unpaired surrogates (lib/domain/text.ts);
 *   at most 20 keys on a run.
 *
 * Short, plain strings because they are filtered by and shown in lists, URLs and shells, never parsed.
 */
import { z } from 'zod';
import { storableText } from './text';

export const TAG_MAX = 64;
export const TAGS_PER_RUN = 20;
export const META_KEY_MAX = 64;
export const META_VALUE_MAX = 256;
export const META_KEYS_PER_RUN = 20;

export const tagSchema = z
  .string({ error: 'must be a tag (text)' })
  .min(1, 'must not be empty')
  .max(TAG_MAX, `must be at most ${TAG_MAX} characters`)
  .regex(/^[A-Za-z0-9][\w.:/@-]*$/, 'letters, digits and . _ : / @ - only, starting with a letter or digit');

export const metaKeySchema = z
  .string({ error: 'must be a metadata key (text)' })
  .min(1, 'must not be empty')
  .max(META_KEY_MAX, `must be at most ${META_KEY_MAX} characters`)
  .regex(/^[A-Za-z0-9][A-Za-z0-9._-]*$/, 'letters, digits and . _ - only, starting with a letter or digit');

export const metaValueSchema = z
  .string({ error: 'must be text' })
  .max(META_VALUE_MAX, `must be at most ${META_VALUE_MAX} characters`)
  .refine((s) => !/\p{Cc}/u.test(s), { message: 'must not contain control characters', abort: true })
  .superRefine(storableText);

/** A run's tags as given: each by the tag rule, duplicates dropped, at most TAGS_PER_RUN. */
export const tagsSchema = z
  .array(tagSchema, { error: 'must be a list of tags' })
  .transform((tags) => [...new Set(tags)])
  .refine((tags) => tags.length <= TAGS_PER_RUN, `must be at most ${TAGS_PER_RUN} tags`);

/**
 * A run's metadata as given: each key and value by its rule, at most META_KEYS_PER_RUN keys. The keys are
 * checked on the object as given, before zod's record reads it: the record drops a `__proto__` key unseen (it
 * would set the result's prototype), so a rule applied after it let the run start without that key, and without
 * a word. A refused key stops there: its values are checked once the keys pass.
 */
export const metadataSchema = z.preprocess(
  (given, ctx) => {
    if (given === null || typeof given !== 'object' || Array.isArray(given)) return given;
    for (const key of Object.keys(given)) {
      const checked = metaKeySchema.safeParse(key);
      if (!checked.success) ctx.addIssue({ code: 'custom', path: [key], message: checked.error.issues[0]!.message });
    }
    return given;
  },
  z
    .record(z.string(), metaValueSchema, { error: 'must be an object of text values' })
    .refine((metadata) => Object.keys(metadata).length <= META_KEYS_PER_RUN, {
      message: `must have at most ${META_KEYS_PER_RUN} keys`,
    }),
);

/** The runs list's metadata filter, `key=value` (the value may be empty, and may hold `=`): the URL's and the CLI's. */
export const metaFilterSchema = z.string({ error: 'must be key=value' }).transform((text, ctx) => {
  const at = text.indexOf('=');
  if (at < 0) {
    ctx.addIssue({ code: 'custom', message: 'must be key=value' });
    return z.NEVER;
  }
  const key = metaKeySchema.safeParse(text.slice(0, at));
  const value = metaValueSchema.safeParse(text.slice(at + 1));
  for (const [part, checked] of [
    ['key', key],
    ['value', value],
  ] as const)
    if (!checked.success) ctx.addIssue({ code: 'custom', message: `${part}: ${checked.error.issues[0]!.message}` });
  if (!key.success || !value.success) return z.NEVER;
  return { key: key.data, value: value.data };
});

/** A metadata filter as the URL, the CLI and the audit line write it. */
export const metaFilterText = (m: { key: string; value: string }) => `${m.key}=${m.value}`;

/**
 * Why a run's tags and metadata after a change would break the per-run limits, or undefined: a store checks the
 * result, in the transaction that writes it, since an added tag or key counts with those the run has.
 */
export function runTagsProblem(tags: number, metaKeys: number): string | undefined {
  if (tags > TAGS_PER_RUN) return `tags: a run may have at most ${TAGS_PER_RUN} tags, it would have ${tags}`;
  if (metaKeys > META_KEYS_PER_RUN)
    return `metadata: a run may have at most ${META_KEYS_PER_RUN} keys, it would have ${metaKeys}`;
  return undefined;
}
