/**
 * Validation at the edge: every body, query string and path parameter goes through a zod schema, and a
 * failure names each field with its messages — `{ fields: { "input.count": ["…"] } }` — so a client can
 * show or fix exactly what was wrong. A problem with the whole value is filed under its source's name.
 */
import { z } from 'zod';
import { ApiError, type FieldErrors } from './errors';

export type Source = 'body' | 'query' | 'path';

export function fieldErrors(error: z.ZodError, source: Source, prefix: PropertyKey[] = []): FieldErrors {
  const out: FieldErrors = {};
  for (const issue of error.issues) {
    if (issue.code === 'unrecognized_keys') {
      // Filed under each unknown name, so a typo ("froce") is named where the client looks.
      for (const key of issue.keys) (out[[...prefix, ...issue.path, key].map(String).join('.')] ??= []).push('is not a known field');
      continue;
    }
    const path = [...prefix, ...issue.path].map(String).join('.') || source;
    (out[path] ??= []).push(issue.message);
  }
  return out;
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
 * The query string as an object of single values. A repeated parameter is refused rather than silently
 * resolved one way or the other.
 */
export function queryOf(url: string): Record<string, string> {
  const params = new URL(url).searchParams;
  const out: Record<string, string> = {};
  const repeated: FieldErrors = {};
  for (const [name, value] of params) {
    if (Object.hasOwn(out, name)) repeated[name] = ['given more than once'];
    out[name] = value;
  }
  if (Object.keys(repeated).length) throw new ApiError('INVALID_INPUT', `invalid query: ${Object.keys(repeated)[0]} is given more than once`, repeated);
  return out;
}

/** Query booleans: only the words, so `?orphaned=yes` is an error rather than a silent false. */
export const queryBool = z.enum(['true', 'false'], { error: 'must be true or false' }).transform((v) => v === 'true');

/** Query limits: digits only ("1e3" and "-1" are refused, not rounded), within [1, max]. */
export const queryLimit = (max: number) => z.string()
  .regex(/^\d{1,6}$/, `must be a whole number from 1 to ${max}`)
  .transform(Number)
  .pipe(z.number().int().min(1, `must be a whole number from 1 to ${max}`).max(max, `must be at most ${max}`));
