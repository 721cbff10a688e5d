/**
 * Validation at the edge: every body, query string and path parameter goes through a zod schema, and a
 * failure names each field with its messages — `{ fields: { "input.count": ["…"] } }` — so a client can
 * show or fix exactly what was wrong. A problem with the whole value is filed under its source's name.
 */
import { z } from 'zod';
import { ApiError, type FieldErrors } from '../errors';

export type Source = 'body' | 'query' | 'path';

export function fieldErrors(error: z.ZodError, source: Source, prefix: PropertyKey[] = []): FieldErrors {
  // A Map, not an object: a client's field may be called `constructor` or `__proto__`, and `out[name] ??= []`
  // on a plain object would find Object.prototype's member instead of nothing (a 500 the fuzz test found).
  const out = new Map<string, string[]>();
  const add = (path: PropertyKey[], message: string) => {
    const name = [...prefix, ...path].map(String).join('.') || source;
    out.set(name, [...(out.get(name) ?? []), message]);
  };
  for (const issue of error.issues) {
    // Unknown names are filed under each name, so a typo ("froce") is named where the client looks.
    if (issue.code === 'unrecognized_keys')
      for (const key of issue.keys) add([...issue.path, key], 'is not a known field');
    else add(issue.path, issue.message);
  }
  return Object.fromEntries(out);
}

/** The parsed value, or INVALID_INPUT naming every bad field. */
export function parse<T extends z.ZodType>(schema: T, value: unknown, source: Source): z.output<T> {
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  const fields = fieldErrors(parsed.error, source);
  const first = Object.entries(fields)[0]!;
  throw new ApiError('INVALID_INPUT', `invalid ${source}: ${first[0]}: ${first[1][0]}`, fields);
}

/**
 * The query string as an object of single values, and of lists for the `repeatable` names (`?tag=a&tag=b`),
 * which are always lists. Any other repeated parameter is refused rather than silently resolved one way or the
 * other.
 */
export function queryOf(url: string, repeatable: readonly string[] = []): Record<string, string | string[]> {
  const out = new Map<string, string>();
  const lists = new Map<string, string[]>();
  const repeated = new Map<string, string[]>();
  for (const [name, value] of new URL(url).searchParams) {
    if (repeatable.includes(name)) {
      lists.set(name, [...(lists.get(name) ?? []), value]);
      continue;
    }
    if (out.has(name)) repeated.set(name, ['given more than once']);
    out.set(name, value);
  }
  if (repeated.size)
    throw new ApiError(
      'INVALID_INPUT',
      `invalid query: ${[...repeated.keys()][0]} is given more than once`,
      Object.fromEntries(repeated),
    );
  return { ...Object.fromEntries(out), ...Object.fromEntries(lists) };
}

/** Query booleans: only the words, so `?orphaned=yes` is an error rather than a silent false. */
export const queryBool = z.enum(['true', 'false'], { error: 'must be true or false' }).transform((v) => v === 'true');

/** Query limits: digits only ("1e3" and "-1" are refused, not rounded), within [1, max]. */
export const queryLimit = (max: number) =>
  z
    .string()
    .regex(/^\d{1,6}$/, `must be a whole number from 1 to ${max}`)
    .transform(Number)
    .pipe(z.number().int().min(1, `must be a whole number from 1 to ${max}`).max(max, `must be at most ${max}`));
