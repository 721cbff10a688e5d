/**
 * A start under a taken id, on every backend: the same workflow and parsed input answers with that run
 * (`existed`), writing nothing (no run, no event, no audit line); another workflow or input is refused with
 * CONFLICT, naming what differs, and writes nothing either. Through lib/control and the engine's startRun.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { type Caller, type ControlDeps, type ControlStore, runs } from '../../lib/control';
import { startRun } from '../../lib/engine/runs';
import { defineWorkflow, WorkflowRegistry } from '../../lib/engine/workflow';
import { RunExistsError } from '../../lib/errors';
import { backends, type StoreHandle } from '../support/backends';

const list = await backends();

const OPERATOR: Caller = { actor: 'olga (operator)', role: 'operator', channel: 'dashboard' };

const echo = defineWorkflow({
  name: 'echo',
  input: z.strictObject({
    n: z.number().int(),
    mode: z.string().default('fast'),
    tags: z.array(z.string()).default([]),
  }),
  totalSteps: 1,
  async run() {},
});
const other = defineWorkflow({ name: 'other', input: z.strictObject({}), totalSteps: 1, async run() {} });
const registry = new WorkflowRegistry([echo, other]);

describe.each(list)('starting a run id again on $name', (backend) => {
  let h: StoreHandle;
  let store: ControlStore;
  let deps: ControlDeps;

  beforeEach(async () => {
    h = await backend.open();
    store = h.store;
    deps = { store: async () => store, claimTtlMs: 30_000, maxBytes: 1000, workflows: async () => registry };
  });
  afterEach(() => h.close());

  /** What a start may have written: runs, the run's events, audit lines. */
  const written = async () => ({
    runs: (await store.listRuns({ claimTtlMs: 30_000 })).map((r) => `${r.id}:${r.workflow}:${r.status}`),
    input: (await store.getRun('r'))?.inputJson,
    events: (await store.listEvents('r')).map((e) => `${e.outcome}:${e.detail}`),
    audit: (await store.listAudit()).map((a) => `${a.action}:${a.target}`),
  });

  it('answers the same workflow and parsed input with the run, unaudited and with no event', async () => {
    const first = await runs.start(deps, OPERATOR, { workflow: 'echo', input: { n: 3 }, id: 'r' });
    expect(first.existed).toBe(false);
    const before = await written();
    expect(before).toEqual({
      runs: ['r:echo:queued'],
      input: '{"n":3,"mode":"fast","tags":[]}',
      events: ['operator:started by olga (operator)'],
      audit: ['start:r'],
    });

    // The defaults written out, and the keys in another order: the same parsed input.
    const again = await runs.start(deps, OPERATOR, {
      workflow: 'echo',
      input: { tags: [], mode: 'fast', n: 3 },
      id: 'r',
    });
    expect(again).toEqual({ ...first, existed: true });
    // The engine's start answers the row; lib/control's adds the run's tags.
    const { runTags, ...row } = again;
    expect(runTags).toEqual({ tags: [], metadata: {} });
    expect(await startRun(store, registry, { workflow: 'echo', input: { n: 3 }, id: 'r' })).toEqual(row);
    expect(await written()).toEqual(before);
  });

  it('refuses another input or workflow with CONFLICT, naming what differs, and writes nothing', async () => {
    await runs.start(deps, OPERATOR, { workflow: 'echo', input: { n: 3, tags: ['a'] }, id: 'r' });
    const before = await written();
    const cases: [() => Promise<unknown>, string][] = [
      [
        () => runs.start(deps, OPERATOR, { workflow: 'echo', input: { n: 4, tags: ['a'] }, id: 'r' }),
        'run r exists with another input: input.n is 3, not 4',
      ],
      [
        () => runs.start(deps, OPERATOR, { workflow: 'echo', input: { n: 3, tags: ['a', 'b'] }, id: 'r' }),
        'run r exists with another input: input.tags[1] is not set, and this start gives "b"',
      ],
      [
        () => startRun(store, registry, { workflow: 'echo', input: { n: 3, mode: 'slow', tags: ['a'] }, id: 'r' }),
        'run r exists with another input: input.mode is "fast", not "slow"',
      ],
      [
        () => runs.start(deps, OPERATOR, { workflow: 'echo', input: { n: 3 }, id: 'r' }),
        'run r exists with another input: input.tags[0] is "a", and this start leaves it out',
      ],
      [
        () => runs.start(deps, OPERATOR, { workflow: 'other', input: {}, id: 'r' }),
        'run r exists with another workflow: it is echo, not other',
      ],
      // A budget or priority given must be the run's: the caller would otherwise never hear it was not kept.
      [
        () => startRun(store, registry, { workflow: 'echo', input: { n: 3, tags: ['a'] }, id: 'r', budgetUsd: 3 }),
        'run r exists with another budget: it is not set, not $3',
      ],
      [
        () => startRun(store, registry, { workflow: 'echo', input: { n: 3, tags: ['a'] }, id: 'r', priority: 9 }),
        'run r exists with another priority: it is 0, not 9',
      ],
    ];
    for (const [attempt, message] of cases) {
      const error = await attempt().then(
        () => null,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(RunExistsError);
      expect(error).toMatchObject({ code: 'CONFLICT', message });
    }
    expect(await written()).toEqual(before);
  });
});

describe.each(list)('the library’s start on $name', (backend) => {
  let h: StoreHandle;
  beforeEach(async () => {
    h = await backend.open();
  });
  afterEach(() => h.close());

  // startRun is exported (waybill/engine): it checks what the API and the CLI check, and writes nothing otherwise.
  it('refuses bad tags, metadata, budget or priority, naming the field, and writes nothing', async () => {
    const start = (extra: object) =>
      startRun(h.store, registry, { workflow: 'echo', input: { n: 1 }, id: 'lib', ...extra }).then(
        () => 'started',
        (e: Error) => `${e.name}: ${e.message}`,
      );
    expect(await start({ tags: ['ok', 'bad tag'] })).toMatch(/^InvalidInputError: start: tags\.1: /);
    expect(await start({ tags: 'notalist' })).toMatch(/^InvalidInputError: start: tags: /);
    expect(await start({ tags: Array.from({ length: 21 }, (_, i) => `t${i}`) })).toMatch(
      /^InvalidInputError: start: tags: /,
    );
    expect(await start({ metadata: { _bad: 'x' } })).toMatch(/^InvalidInputError: start: metadata\._bad: /);
    expect(await start({ budgetUsd: -1 })).toBe('InvalidInputError: start: budgetUsd must be more than 0 US dollars');
    expect(await start({ priority: 1.5 })).toBe('InvalidInputError: start: priority must be a whole number');
    expect(await h.store.getRun('lib')).toBeNull();
    expect(await start({ tags: ['ok'], metadata: { env: 'prod' }, budgetUsd: 2, priority: 3 })).toBe('started');
  });
});
