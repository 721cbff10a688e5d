/**
 * Which inputs the start form can draw from a JSON Schema (the subset zod's toJSONSchema emits for flat
 * objects): strings, numbers and integers with their bounds, booleans, enums. Anything else (nested objects,
 * arrays, unions) is left to the raw JSON editor, which always holds the whole input.
 */
export type FieldKind = 'string' | 'number' | 'integer' | 'boolean' | 'enum' | 'json';

export interface SchemaField {
  name: string;
  kind: FieldKind;
  description: string | null;
  /** In `required` and without a default: the run cannot start without it. */
  required: boolean;
  hasDefault: boolean;
  defaultValue: unknown;
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
  options?: unknown[];
}

type Json = Record<string, unknown>;

/** The top-level fields of an object schema; null when the schema is not one (the JSON editor alone then). */
export function schemaFields(schema: Json | null): SchemaField[] | null {
  if (schema?.type !== 'object' || typeof schema.properties !== 'object' || schema.properties === null) return null;
  const required = new Set(Array.isArray(schema.required) ? schema.required : []);
  return Object.entries(schema.properties as Record<string, Json>).map(([name, property]) => {
    const hasDefault = typeof property === 'object' && property !== null && 'default' in property;
    const field: SchemaField = {
      name,
      kind: kindOf(property),
      description: typeof property?.description === 'string' ? property.description : null,
      required: required.has(name) && !hasDefault,
      hasDefault,
      defaultValue: hasDefault ? property.default : undefined,
    };
    const number = (key: string) => (typeof property?.[key] === 'number' ? (property[key] as number) : undefined);
    field.minimum = number('minimum') ?? number('exclusiveMinimum');
    field.maximum = number('maximum') ?? number('exclusiveMaximum');
    field.minLength = number('minLength');
    field.maxLength = number('maxLength');
    if (field.kind === 'enum') field.options = (property.enum as unknown[]) ?? [property.const];
    return field;
  });
}

function kindOf(property: Json | undefined): FieldKind {
  if (!property || typeof property !== 'object') return 'json';
  if (Array.isArray(property.enum) && property.enum.every((v) => ['string', 'number', 'boolean'].includes(typeof v)))
    return 'enum';
  if (property.type === 'string') return 'string';
  if (property.type === 'integer') return 'integer';
  if (property.type === 'number') return 'number';
  if (property.type === 'boolean') return 'boolean';
  return 'json';
}

/** The input as an object, or null when the JSON text is not one (the fields then wait for the text). */
export function objectOf(text: string): Json | null {
  if (text.trim() === '') return {};
  try {
    const value = JSON.parse(text);
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? value : null;
  } catch {
    return null;
  }
}

/** The JSON text with one field set (or, with undefined, removed), other fields and their order kept. */
export function withField(text: string, name: string, value: unknown): string {
  const object = objectOf(text) ?? {};
  const next: Json = { ...object };
  if (value === undefined) delete next[name];
  else next[name] = value;
  return JSON.stringify(next, null, 2);
}

export const shown = (value: unknown): string => (typeof value === 'string' ? value : JSON.stringify(value));
