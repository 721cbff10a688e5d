/**
 * Checking a run's input, the same way whether the schema is the workflow's own zod schema (on a worker, or
 * for the built-ins the control plane ships with) or one rebuilt from the JSON Schema a worker published
 * (for a user's workflow, whose code the control plane does not have). Either way each problem names its
 * field, and the parsed value (defaults applied) is what gets stored.
 */
import { z } from 'zod';
import { jsonTextProblems } from '../domain/text';
import { InvalidInputError } from '../errors';

export interface InputIssue {
  path: PropertyKey[];
  message: string;
}

export type InputCheck = { ok: true; input: unknown } | { ok: false; issues: InputIssue[] };

/** Any zod 4 schema: the user's module may bring its own copy of zod, so only the method is relied on. */
interface Parser {
  safeParse(value: unknown, params?: { error?: z.core.$ZodErrorMap }): z.ZodSafeParseResult<unknown>;
}

const TYPE_NAMES: Record<string, string> = {
  number: 'a number',
  int: 'a whole number',
  string: 'a string',
  boolean: 'true or false',
  object: 'an object',
  array: 'an array',
  null: 'null',
  bigint: 'a whole number',
};

/**
 * Messages for the issues a schema did not word itself (a schema's own messages win: zod asks the schema
 * first). JSON Schema carries no messages, so these are what a published workflow's input errors read like.
 */
export function issueMessage(issue: z.core.$ZodRawIssue): string | undefined {
  switch (issue.code) {
    case 'invalid_type':
      if (issue.input === undefined) return 'is required';
      return TYPE_NAMES[issue.expected] ? `must be ${TYPE_NAMES[issue.expected]}` : undefined;
    case 'too_small':
    case 'too_big': {
      const bound = Number(issue.code === 'too_small' ? issue.minimum : issue.maximum);
      const small = issue.code === 'too_small';
      const edge = issue.inclusive === false ? (small ? 'greater than' : 'less than') : small ? 'at least' : 'at most';
      if (issue.origin === 'number' || issue.origin === 'int') return `must be ${edge} ${bound}`;
      if (issue.origin === 'string') return `must be ${edge} ${bound} character${bound === 1 ? '' : 's'} long`;
      if (issue.origin === 'array' || issue.origin === 'set')
        return `must have ${edge} ${bound} item${bound === 1 ? '' : 's'}`;
      return undefined;
    }
    case 'invalid_value':
      return Array.isArray(issue.values)
        ? `must be one of ${issue.values.map((v: unknown) => JSON.stringify(v)).join(', ')}`
        : undefined;
    case 'invalid_format':
      return issue.format === 'regex' ? `must match ${issue.pattern}` : `must be a valid ${issue.format}`;
    case 'not_multiple_of':
      return `must be a multiple of ${issue.divisor}`;
    default:
      return undefined;
  }
}

/**
 * The input parsed by its schema, or each problem under its field. The parsed value (what is stored) must also be
 * text a store keeps, every string and field name of it (lib/domain/text.ts): every start goes through here (the
 * API, the CLI, the library, children, events, schedules, reruns and forks with an edited input), so none stores
 * an input PostgreSQL's pick cannot read, on either backend.
 */
export function checkInput(schema: Parser, input: unknown): InputCheck {
  const parsed = schema.safeParse(input, { error: issueMessage });
  if (parsed.success) {
    const unstorable = jsonTextProblems(parsed.data);
    return unstorable.length === 0 ? { ok: true, input: parsed.data } : { ok: false, issues: unstorable };
  }
  const issues: InputIssue[] = [];
  for (const issue of parsed.error.issues) {
    // An unknown field is filed under its own name, so a typo is named where the user looks.
    if (issue.code === 'unrecognized_keys')
      for (const key of issue.keys) issues.push({ path: [...issue.path, key], message: 'is not a known field' });
    else issues.push({ path: issue.path, message: issue.message });
  }
  return { ok: false, issues };
}

export const issuePath = (issue: InputIssue): string =>
  issue.path.length ? issue.path.map(String).join('.') : '(input)';

/** The one-line form the CLI and the engine raise: `invalid input for notify: count: must be a number`. */
export function inputError(workflow: string, issues: InputIssue[]): InvalidInputError {
  return new InvalidInputError(
    `invalid input for ${workflow}: ${issues.map((i) => `${issuePath(i)}: ${i.message}`).join('; ')}`,
  );
}

/**
 * Each zod schema's JSON Schema, converted once: every catalog the pages load (several a request) carries the
 * built-ins' schemas, and zod's conversion walks the whole schema each time. Its readers never change it.
 */
const jsonSchemas = new WeakMap<z.ZodType, Record<string, unknown>>();

/** The input side's JSON Schema: what a caller may send (a defaulted field is optional and carries its default). */
export function inputJsonSchema(schema: z.ZodType): Record<string, unknown> {
  let json = jsonSchemas.get(schema);
  if (!json) {
    json = z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as Record<string, unknown>;
    jsonSchemas.set(schema, json);
  }
  return json;
}

const compiled = new Map<string, z.ZodType>();

/**
 * A published JSON Schema as a zod schema (zod's own fromJSONSchema), compiled once per text. Workers check
 * at publication that their schemas compile, so a failure here means the row was written by something else.
 */
export function schemaFromJson(text: string): z.ZodType {
  let schema = compiled.get(text);
  if (!schema) {
    schema = z.fromJSONSchema(JSON.parse(text));
    if (compiled.size >= 256) compiled.clear();
    compiled.set(text, schema);
  }
  return schema;
}
