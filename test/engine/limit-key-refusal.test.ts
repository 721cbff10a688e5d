/**
 * A concurrency or rate key read from an object or an array (issue: D3). The store keys such a run `""`, with
 * every run that lacks the path, so a workflow keyed `customer` started with `{ customer: { id } }` put all its
 * customers under one key and unrelated runs held each other back, with nothing said. Now every start refuses it
 * through its workflows' one check (lib/engine/workflow.ts startCheck, the rule in lib/domain/run-limits.ts), on
 * both backends: the library's startRun (by code, or by a published row), lib/control's start (the API's, the
 * CLI's), a schedule's add, an event's subscribed start, a rerun or fork with an edited input, and a child's
 * start; each with the same words, and not a runs row written. A string, a number, a boolean, null or no value
 * still start, and a run stored before the rule with an object there is still picked under the key `""`. The
 * HTTP and CLI edges are test/api/limit-key.ts's.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { type Caller, type ControlDeps, events, rewind, runs, schedules } from '../../lib/control';
import type { RunLimits } from '../../lib/domain/run-limits';
import { WorkflowCatalog } from '../../lib/engine/catalog';
import { emit } from '../../lib/engine/emit';
import { publicationsOf } from '../../lib/engine/publish';
import { startRun } from '../../lib/engine/runs';
import { defineWorkflow, limitsOf, WorkflowRegistry } from '../../lib/engine/workflow';
import { InvalidInputError, StartRefusedError } from '../../lib/errors';
import { type StoreHandle, untilRun } from '../support/backends';
import { servedStores } from '../support/served-stores';

const percust = defineWorkflow({
  name: 'percust',
  input: z.object({ customer: z.unknown().optional(), provider: z.unknown().optional(), n: z.number().default(0) }),
  concurrency: { limit: 1, key: 'customer' },
  rateLimit: { limit: 100, period: 'second', key: 'provider.name' },
  on: ['order.placed'],
  async run(ctx, input) {
    return (await ctx.step('work', () => input.n)).result;
  },
});
/** Starts a child of percust with the input it is given. */
const starter = defineWorkflow({
  name: 'starter',
  input: z.object({ input: z.unknown() }),
  async run(ctx, input) {
    return ctx.startChild('c', 'percust', input.input);
  },
});
const registry = new WorkflowRegistry([percust, starter]);
const LIMITS: Record<string, RunLimits> = { percust: limitsOf(percust) };
const OPERATOR: Caller = { actor: 'olga (operator)', role: 'operator', channel: 'api' };

const must = 'must be a string, a number or a boolean';
const CASES: [string, Record<string, unknown>, string, string][] = [
  ['an object', { customer: { id: 1 } }, 'customer', `is an object; percust's concurrency key ${must}`],
  ['an array', { customer: [1] }, 'customer', `is an array; percust's concurrency key ${must}`],
  ['an empty object', { customer: {} }, 'customer', `is an object; percust's concurrency key ${must}`],
  [
    'a rate key object',
    { provider: { name: { x: 1 } } },
    'provider.name',
    `is an object; percust's rate limit key ${must}`,
  ],
  ['a rate key array', { provider: { name: [] } }, 'provider.name', `is an array; percust's rate limit key ${must}`],
];

const stores = servedStores();

describe.each([['sqlite'], ['postgres']] as const)('a limit key that is an object or an array, on %s', (name) => {
  async function setup() {
    const h = await stores.open(name);
    if (!h) return null;
    // Published as `waybill worker` publishes it: the control plane checks by this row, not by the code.
    await h.store.registerWorker({ id: 'w-pub', host: 'elsewhere', pid: 1 });
    await h.store.publishWorkflows('w-pub', publicationsOf(registry));
    const deps: ControlDeps = {
      store: async () => h.store,
      claimTtlMs: 30_000,
      maxBytes: 100_000,
      workflows: (store) => WorkflowCatalog.load(store, new WorkflowRegistry([])),
    };
    return { h, deps };
  }
  const runIds = async (h: StoreHandle) =>
    (await h.rows<{ id: string }>('SELECT id FROM runs ORDER BY id')).map((r) => r.id);

  it("refuses the library's start by the code's limits and by the published ones, writing no run", async () => {
    const s = await setup();
    if (!s) return;
    const catalog = await WorkflowCatalog.load(s.h.store, new WorkflowRegistry([]));
    for (const workflows of [registry, catalog])
      for (const [what, input, path, field] of CASES) {
        const refused = await startRun(s.h.store, workflows, { workflow: 'percust', id: 'r', input }).catch(
          (error: unknown) => error,
        );
        expect(refused, what).toBeInstanceOf(InvalidInputError);
        expect((refused as Error).message, what).toBe(`input.${path} ${field}`);
      }
    expect(await runIds(s.h)).toEqual([]);
  });

  it("refuses lib/control's start, a schedule and a rerun or fork with an edited input, naming the field", async () => {
    const s = await setup();
    if (!s) return;
    await startRun(s.h.store, registry, { workflow: 'percust', id: 'done', input: { customer: 'acme' } });
    const now = await s.h.now();
    await s.h.exec(`UPDATE runs SET status = 'completed' WHERE id = 'done'`);
    await s.h.exec(`INSERT INTO committed (idem_key, run_id, result_json, committed_at, step, source)
      VALUES ('done:step:0', 'done', '0', ${now}, 0, 'executed')`);
    const before = JSON.stringify(await s.h.rows('SELECT id, input_json, status FROM runs ORDER BY id'));
    for (const [what, input, path, field] of CASES) {
      const expected = { kind: 'limit-key', message: `input.${path} ${field}`, fields: { [`input.${path}`]: [field] } };
      const refusals = await Promise.all([
        runs.start(s.deps, OPERATOR, { workflow: 'percust', input, id: 'r' }).catch((e: unknown) => e),
        schedules
          .add(s.deps, OPERATOR, { name: 'nightly', workflow: 'percust', cron: '0 0 3 * * *', input })
          .catch((e: unknown) => e),
        rewind.rerun(s.deps, OPERATOR, { runId: 'done', fromStep: 0, input }).catch((e: unknown) => e),
        rewind.fork(s.deps, OPERATOR, { runId: 'done', fromStep: 0, input, id: 'forked' }).catch((e: unknown) => e),
      ]);
      for (const refused of refusals) {
        expect(refused, what).toBeInstanceOf(StartRefusedError);
        const { kind, message, fields } = refused as StartRefusedError;
        expect({ kind, message, fields }, what).toEqual(expected);
      }
    }
    expect(JSON.stringify(await s.h.rows('SELECT id, input_json, status FROM runs ORDER BY id'))).toBe(before);
    expect(await s.h.store.listSchedules()).toEqual([]);
    expect((await s.h.store.listAudit()).map((a) => a.action)).toEqual([]);
  });

  it("lists an event's refused start beside the others, by lib/control's emit and the library's alike", async () => {
    const s = await setup();
    if (!s) return;
    const sent = await events.emit(s.deps, OPERATOR, {
      id: 'e1',
      name: 'order.placed',
      data: { customer: { id: 7 } },
    });
    expect([sent.runs, sent.refused]).toEqual([
      [],
      [{ workflow: 'percust', message: `input.customer is an object; percust's concurrency key ${must}` }],
    ]);
    const library = await emit(s.h.store, { id: 'e2', name: 'order.placed', data: { provider: { name: ['x'] } } });
    expect(library.refused).toEqual([
      { workflow: 'percust', message: `input.provider.name is an array; percust's rate limit key ${must}` },
    ]);
    expect(await runIds(s.h)).toEqual([]);
    // A scalar key starts as ever.
    const fine = await emit(s.h.store, { id: 'e3', name: 'order.placed', data: { customer: 7 } });
    expect([fine.runs.map((r) => r.runId), fine.refused]).toEqual([['percust:event:e3'], []]);
  });

  it("fails a child's start at its first attempt with the same words, and starts no child", async () => {
    const s = await setup();
    if (!s) return;
    await startRun(s.h.store, registry, { workflow: 'starter', id: 'p', input: { input: { customer: [1, 2] } } });
    stores.serve(s.h, registry, { concurrency: 1 });
    await untilRun(s.h, 'p', 'failed');
    const message = `startChild: input.customer is an array; percust's concurrency key ${must}`;
    expect((await s.h.store.getRun('p'))?.error).toBe(message);
    const failed = (await s.h.store.listEvents('p')).filter((e) => e.outcome === 'failed');
    expect(failed.map((e) => [e.attempt, e.retryAt, e.detail])).toEqual([[1, null, `NonRetryableError: ${message}`]]);
    expect(await runIds(s.h)).toEqual(['p']);
  });

  it('starts a string, a number, a boolean, null or no value; an old run with an object still keys ""', async () => {
    const s = await setup();
    if (!s) return;
    const fine: [string, Record<string, unknown>][] = [
      ['s', { customer: 'acme' }],
      ['n', { customer: 42 }],
      ['b', { customer: true }],
      ['z', { customer: null, provider: null }],
      ['m', {}],
      ['p', { customer: 'acme', provider: { name: 'openai' } }],
    ];
    for (const [id, input] of fine) await startRun(s.h.store, registry, { workflow: 'percust', id, input });
    expect(await runIds(s.h)).toEqual(['b', 'm', 'n', 'p', 's', 'z']);
    await s.h.exec(`DELETE FROM runs`);

    // A run stored before the rule, its key an object: the pick reads it as the key "" still, which a run
    // without the path shares, so with a limit of 1 the second waits while the first runs.
    const now = await s.h.now();
    await s.h.exec(`INSERT INTO runs (id, workflow, input_json, status, attempts, priority, created_at, updated_at)
      VALUES ('old', 'percust', '{"customer":{"id":1},"n":0}', 'queued', 0, 0, ${now - 1}, ${now - 1})`);
    await startRun(s.h.store, registry, { workflow: 'percust', id: 'none', input: {} });
    await startRun(s.h.store, registry, { workflow: 'percust', id: 'acme', input: { customer: 'acme' } });
    const pick = () => s.h.store.claimRun({ workerId: 'w-1', leaseMs: 60_000, workflows: ['percust'], limits: LIMITS });
    await s.h.store.registerWorker({ id: 'w-1', host: 'h', pid: 2, slots: 4 });
    expect((await pick())?.id).toBe('old');
    expect((await pick())?.id).toBe('acme');
    expect(await pick()).toBeNull();
  });
});
