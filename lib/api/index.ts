/**
 * lib/api: the HTTP API's edge, free of Next.js. Route handlers under app/api/v1 authorize with lib/auth,
 * then use these to read and check the request and to shape the answer.
 */
import { z } from 'zod';
import { readJson } from './body';
import { parse, queryOf } from './validate';

export { handle, json, refused } from './errors';

/** The JSON body checked against `schema`; an oversize, malformed or wrong body is a 4xx naming the problem. */
export async function body<T extends z.ZodType>(request: Request, schema: T, limit: number): Promise<z.output<T>> {
  return parse(schema, await readJson(request, limit), 'body');
}

/**
 * The query string checked against `schema` (a strict object of optional string fields, and of string lists
 * for the `repeatable` names).
 */
export function query<T extends z.ZodType>(
  request: Request,
  schema: T,
  repeatable: readonly string[] = [],
): z.output<T> {
  return parse(schema, queryOf(request.url, repeatable), 'query');
}

/**
 * One path parameter, checked; an error names it (`fields: { id: [...] }`). Next.js hands route handlers
 * params already percent-decoded once: decoding again would turn `a%2541` into `aA`, another run.
 */
export function param<T extends z.ZodType>(value: string, name: string, schema: T): z.output<T> {
  const parsed = parse(z.object({ [name]: schema }), { [name]: value }, 'path') as Record<string, z.output<T>>;
  return parsed[name]!;
}
