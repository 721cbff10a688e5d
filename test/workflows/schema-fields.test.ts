/**
 * The start form's fields come from the published JSON Schema: a defaulted field is optional and shows its
 * default (issue 11, item 20: agent-batch's latencyMs and failureRate were marked required), bounds and
 * enums carry over, and what no input can draw (arrays, nested objects) is left to the JSON editor.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { objectOf, schemaFields, withField } from '../../app/components/schema-fields';
import { inputJsonSchema } from '../../lib/engine/input-check';
import { agentBatchInput, notifyInput } from '../../lib/engine/workflows';

const byName = (schema: z.ZodType) =>
  Object.fromEntries((schemaFields(inputJsonSchema(schema)) ?? []).map((f) => [f.name, f]));

describe('fields drawn from a JSON Schema', () => {
  it("marks agent-batch's defaulted fields optional, with their defaults, and its list as JSON", () => {
    const fields = byName(agentBatchInput);
    expect(fields.latencyMs).toMatchObject({
      kind: 'integer',
      required: false,
      hasDefault: true,
      defaultValue: 50,
      minimum: 0,
      maximum: 60_000,
    });
    expect(fields.failureRate).toMatchObject({
      kind: 'number',
      required: false,
      hasDefault: true,
      defaultValue: 0,
      minimum: 0,
      maximum: 1,
    });
    expect(fields.count).toMatchObject({ kind: 'integer', required: false, hasDefault: false, minimum: 1 });
    expect(fields.items).toMatchObject({ kind: 'json', required: false });
    expect(byName(notifyInput)).toMatchObject({
      count: { required: true },
      outbox: { kind: 'string', required: true, minLength: 1 },
      latencyMs: { required: false, defaultValue: 0 },
    });
  });

  it('draws enums, booleans and descriptions, and nothing for a schema that is not an object', () => {
    const fields = byName(
      z.object({
        mode: z.enum(['a', 'b']).default('b').describe('how'),
        on: z.boolean(),
        nested: z.object({ x: z.number() }),
      }),
    );
    expect(fields.mode).toMatchObject({
      kind: 'enum',
      options: ['a', 'b'],
      defaultValue: 'b',
      description: 'how',
      required: false,
    });
    expect(fields.on).toMatchObject({ kind: 'boolean', required: true });
    expect(fields.nested).toMatchObject({ kind: 'json', required: true });
    expect(schemaFields(inputJsonSchema(z.array(z.string())))).toBeNull();
  });

  it('edits one key of the JSON text and keeps the others', () => {
    const text = JSON.stringify({ count: 3, items: ['a'] }, null, 2);
    expect(JSON.parse(withField(text, 'latencyMs', 10))).toEqual({ count: 3, items: ['a'], latencyMs: 10 });
    expect(JSON.parse(withField(text, 'count', undefined))).toEqual({ items: ['a'] });
    expect(objectOf('{"a": ')).toBeNull();
    expect(objectOf('[1]')).toBeNull();
    expect(objectOf('')).toEqual({});
  });
});
