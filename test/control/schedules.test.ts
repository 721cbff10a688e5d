/**
 * lib/control/schedules on every backend: a viewer may list but not change, refused before the store is opened;
 * a bad field is refused before it too; the list shows each schedule's last runs, newest first.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { type Caller, type ControlDeps, ControlInputError, schedules } from '../../lib/control';
import { planFiring } from '../../lib/engine/schedules/policy';
import { defineWorkflow, WorkflowRegistry } from '../../lib/engine/workflow';
import { ForbiddenError } from '../../lib/errors';
import { type Store, tickRunId } from '../../lib/store/contract';
import { backends, type StoreHandle } from '../support/backends';

const list = await backends();
const OPERATOR: Caller = { actor: 'olga (operator)', role: 'operator', channel: 'dashboard' };
const VIEWER: Caller = { actor: 'vera (viewer)', role: 'viewer', channel: 'api' };

const echo = defineWorkflow({
  name: 'echo',
  input: z.strictObject({ n: z.number().int().default(1) }),
  run: async () => null,
});

describe.each(list)('lib/control schedules on $name', (backend) => {
  let h: StoreHandle;
  let store: Store;
  let opened: number;
  let deps: ControlDeps;

  beforeEach(async () => {
    h = await backend.open();
    store = h.store;
    opened = 0;
    deps = {
      store: async () => {
        opened++;
        return store;
      },
      claimTtlMs: 30_000,
      maxBytes: 1000,
      workflows: async () => new WorkflowRegistry([echo]),
    };
  });
  afterEach(() => h.close());

  it('refuses a viewer and a bad field before the store is opened', async () => {
    const add = { name: 'hourly', workflow: 'echo', cron: '0 0 * * * *' };
    await expect(schedules.add(deps, VIEWER, add)).rejects.toBeInstanceOf(ForbiddenError);
    await expect(schedules.setPaused(deps, VIEWER, true, { name: 'hourly' })).rejects.toBeInstanceOf(ForbiddenError);
    await expect(schedules.remove(deps, VIEWER, { name: 'hourly' })).rejects.toBeInstanceOf(ForbiddenError);
    const bad = await schedules.add(deps, OPERATOR, { ...add, cron: '61 * * * * *' }).catch((e) => e);
    expect(bad).toBeInstanceOf(ControlInputError);
    expect(Object.keys(bad.fields)).toEqual(['cron']);
    const name = await schedules.add(deps, OPERATOR, { ...add, name: 'has space' }).catch((e) => e);
    expect(Object.keys(name.fields)).toEqual(['name']);
    expect(opened).toBe(0);
    await expect(schedules.add(deps, OPERATOR, { ...add, input: { n: 'x' } })).rejects.toThrow(/input\.n|n:/);
    expect(await store.listSchedules()).toEqual([]);
  });

  it('lists each schedule with its last runs, newest first; a viewer may read it', async () => {
    const row = await schedules.add(deps, OPERATOR, {
      name: 'hourly',
      workflow: 'echo',
      cron: '0 0 * * * *',
      catchUp: 'all',
    });
    expect(row.inputJson).toBe('{"n":1}');
    const hour = Math.floor((await h.now()) / 3600) * 3600;
    await h.exec(`UPDATE schedules SET next_fire_at = ${hour - 7200}`);
    await store.fireDueSchedules(planFiring);
    const [view] = await schedules.list(deps, VIEWER);
    expect(view!.lastRuns.map((r) => [r.id, r.status])).toEqual([
      [tickRunId('hourly', hour), 'queued'],
      [tickRunId('hourly', hour - 3600), 'queued'],
      [tickRunId('hourly', hour - 7200), 'queued'],
    ]);
    expect(view).toMatchObject({ name: 'hourly', nextFireAt: hour + 3600, lastTickAt: hour, paused: false });
  });
});
