/**
 * The refusals lib/control raises besides the store's own (NotFoundError, InvalidTransitionError,
 * ClaimNotOrphanedError…). Each is a WaybillError whose code the API already maps to a status
 * (lib/api/errors.ts), the server actions show as a message, and the CLI turns into an exit code.
 */
import type { z } from 'zod';
import { WaybillError } from '../errors';

export type FieldErrors = Record<string, string[]>;

/**
 * Input that does not fit, nothing changed. `fields` names each wrong field by the operation's own names
 * (`key`, `reason`, `input.count`): the API answers them as they are, the dashboard shows them beside its
 * form fields, and the CLI says them as its flags (`--reason`).
 */
export class ControlInputError extends WaybillError {
  constructor(message: string, readonly fields: FieldErrors) {
    super('INVALID_INPUT', message);
  }

  static of(fields: FieldErrors): ControlInputError {
    const [name, messages] = Object.entries(fields)[0] ?? ['input', ['is invalid']];
    return new ControlInputError(`${name}: ${messages[0]}`, fields);
  }
}

/** zod's issues as fields, path joined with dots; a problem with the whole value is filed under `input`. */
export function zodFields(error: z.ZodError): FieldErrors {
  // A Map: a caller's field may be called `__proto__`, which a plain object's `??=` would find on its prototype.
  const out = new Map<string, string[]>();
  const add = (path: PropertyKey[], message: string) => {
    const name = path.map(String).join('.') || 'input';
    out.set(name, [...(out.get(name) ?? []), message]);
  };
  for (const issue of error.issues) {
    if (issue.code === 'unrecognized_keys') for (const key of issue.keys) add([...issue.path, key], 'is not a known field');
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

/** A claim whose lease is live: its worker may be executing it right now. */
export class LiveClaimError extends WaybillError {
  /** `force`: how the caller's channel says it (`send "force": true`, `--force`), or null where it cannot. */
  constructor(readonly key: string, verb: string, force: string | null) {
    super('CONFLICT', `the claim on ${key} has a live lease (its holder may be executing it): ${verb} only claims whose side effect is in doubt${force ? `, or ${force}` : ''}`);
  }
}
