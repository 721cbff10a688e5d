/**
 * Issue 27 item 2, D2: a run's input holding text PostgreSQL cannot read as JSON (a NUL, an unpaired surrogate,
 * anywhere: its JSON functions parse the whole document) was stored, and on PostgreSQL every pick of its
 * workflow's workers then failed, the key of its concurrency or rate limit being read from the input there. Every
 * start checks its input through the one check (lib/engine/input-check.ts), so on both backends alike: the start is
 * refused naming the field, nothing is written, and a normal run of the workflow is still picked; a library loop's
 * declared run is held to the same rule. The API's 400 is test/api/refused-input.ts's.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { checkDeclaration } from '../../lib/checkpoint/run-declaration';
import type { RunLimits } from '../../lib/domain/run-limits';
import { WorkflowCatalog } from '../../lib/engine/catalog';
import { inputJsonSchema } from '../../lib/engine/input-check';
import { startRun } from '../../lib/engine/runs';
import { defineWorkflow, WorkflowRegistry } from '../../lib/engine/workflow';
import { InvalidInputError } from '../../lib/errors';
import { backends, type StoreHandle } from '../support/backends';

const percust = defineWorkflow({
  name: 'percust',
  input: z.object({
    customer: z.string(),
    note: z.string().optional(),
    meta: z.record(z.string(), z.unknown()).optional(),
  }),
  concurrency: { limit: 1, key: 'customer' },
  rateLimit: { limit: 5, period: 'second', key: 'customer' },
  async run() {
    return null;
  },
});
const LIMITS: Record<string, RunLimits> = {
  percust: { concurrency: { limit: 1, key: 'customer' }, rateLimit: { limit: 5, periodMs: 1000, key: 'customer' } },
};
const NUL = 'must not contain NUL characters';
const LONE = 'must not contain an unpaired surrogate (it is not valid UTF-16, so it has no UTF-8 form to store)';

const list = await backends();

describe.each(list)('an input no store can read back as JSON, on $name', (backend) => {
  let h: StoreHandle;
  beforeEach(async () => {
    h = await backend.open();
  });
  afterEach(() => h.close());

  const runs = async () => (await h.rows<{ n: unknown }>('SELECT count(*) AS n FROM runs'))[0]!.n;

  it('refuses the start naming the field, writes nothing, and the workflow is still picked', async () => {
    const registry = new WorkflowRegistry([percust]);
    // The control plane's catalog checks a published workflow against its JSON Schema: the same rule.
    const catalog = new WorkflowCatalog(new WorkflowRegistry([]), [
      {
        name: 'percust',
        description: null,
        inputSchemaJson: JSON.stringify(inputJsonSchema(percust.input)),
        totalSteps: null,
        version: null,
        events: [],
        limits: LIMITS.percust!,
        publishedBy: 'w-1',
        updatedAt: 0,
        servedBy: [],
      },
    ]);
    const cases: [unknown, string][] = [
      [{ customer: 'acme\u0000' }, `customer: ${NUL}`],
      [{ customer: 'acme\ud800' }, `customer: ${LONE}`],
      // Not only the key: PostgreSQL parses the whole input to read it.
      [{ customer: 'acme', note: 'a\u0000b' }, `note: ${NUL}`],
      [{ customer: 'acme', meta: { 'k\u0000': 1 } }, `meta: field name "k\\u0000" ${NUL}`],
      [{ customer: 'acme', meta: { list: ['ok', '\udc00'] } }, `meta.list.1: ${LONE}`],
    ];
    for (const workflows of [registry, catalog])
      for (const [input, problem] of cases) {
        const refused = await startRun(h.store, workflows, { workflow: 'percust', id: 'poison', input }).catch(
          (error: unknown) => error,
        );
        expect(refused, JSON.stringify(input)).toBeInstanceOf(InvalidInputError);
        expect((refused as Error).message).toBe(`invalid input for percust: ${problem}`);
      }
    expect(Number(await runs())).toBe(0);
    // A library loop declaring a run of that name writes its input too: the same rule.
    expect(() => checkDeclaration({ workflow: 'percust', input: { customer: 'acme\u0000' } })).toThrow(
      `the run's input at customer ${NUL}`,
    );

    // A run of the workflow with text a store keeps starts and is picked, under its limits.
    await startRun(h.store, registry, { workflow: 'percust', id: 'fine', input: { customer: 'acme', note: 'é 😀' } });
    const picked = await h.store.claimRun({ workerId: 'w-1', leaseMs: 60_000, workflows: ['percust'], limits: LIMITS });
    expect(picked?.id).toBe('fine');
    expect(JSON.parse(picked!.inputJson)).toEqual({ customer: 'acme', note: 'é 😀' });
  });
});
