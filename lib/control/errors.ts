/**
 * The refusals lib/control raises besides the store's own (NotFoundError, InvalidTransitionError,
 * ClaimNotOrphanedError…). Each is a WaybillError whose code the API already maps to a status
 * (lib/api/errors.ts), the server actions show as a message, and the CLI turns into an exit code.
 */
import type { z } from 'zod';
import { ControlInputError, type FieldErrors } from '../errors';

export type { FieldErrors };

/** zod's issues as fields, path joined with dots; a problem with the whole value is filed under `input`. */
export function zodFields(error: z.ZodError): FieldErrors {
  // A Map: a caller's field may be called `__proto__`, which a plain object's `??=` would find on its prototype.
  const out = new Map<string, string[]>();
  const add = (path: PropertyKey[], message: string) => {
    const name = path.map(String).join('.') || 'input';
    out.set(name, [...(out.get(name) ?? []), message]);
  };
  for (const issue of error.issues) {
    if (issue.code === 'unrecognized_keys')
      for (const key of issue.keys) add([...issue.path, key], 'is not a known field');
    else add(issue.path, issue.message);
  }
  return Object.fromEntries(out);
}

/** The parsed value, or ControlInputError naming each bad field. */
export function validate<T extends z.ZodType>(schema: T, value: unknown): z.output<T> {
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  throw ControlInputError.of(zodFields(parsed.error));
}
