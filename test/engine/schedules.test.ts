/**
 * A worker fires the schedules due, on the store's clock: a schedule every second makes one run per second the
 * clock moves, and the worker runs them. A workflow's declared schedules are checked when it is defined.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { silentLogger } from '../../lib/engine/log';
import { publicationsOf } from '../../lib/engine/publish';
import { startRun } from '../../lib/engine/runs';
import { declaredSchedules } from '../../lib/engine/schedules/declared';
import { fireSchedules } from '../../lib/engine/schedules/fire';
import { Worker } from '../../lib/engine/worker';
import { defineWorkflow, WorkflowRegistry } from '../../lib/engine/workflow';
import { InvalidInputError } from '../../lib/errors';
import { tickRunId } from '../../lib/store/contract';
import { type StoreHandle, sqliteBackend } from '../support/backends';
import { until } from '../support/until';

const tick = defineWorkflow({
  name: 'tick',
  input: z.object({ n: z.number().default(1) }),
  schedules: [{ name: 'every-second', cron: '* * * * * *', catchUp: 'all', catchUpCap: 100 }],
  async run(ctx, input) {
    return ctx.step('once', () => input.n);
  },
});
const registry = new WorkflowRegistry([tick]);

let h: StoreHandle | undefined;
let stop: (() => Promise<void>) | undefined;
afterEach(async () => {
  await stop?.();
  await h?.close();
  h = stop = undefined;
});

describe('a worker and its schedules', () => {
  it('fires one run per tick as the clock moves, and runs them', async () => {
    h = await sqliteBackend.open();
    const now = await h.now();
    const [declared] = declaredSchedules(registry, now);
    expect(declared).toMatchObject({ name: 'every-second', inputJson: '{"n":1}', nextFireAt: Math.floor(now) + 1 });
    await h.store.upsertDefinedSchedules(['tick'], [declared!]);
    const worker = new Worker({
      store: h.store,
      registry,
      pollMs: 20,
      heartbeatMs: 1000,
      scheduleMs: 1000,
      clock: h.clock,
    });
    const done = worker.run();
    stop = async () => {
      worker.stop();
      await done;
    };
    for (let s = 1; s <= 5; s++) {
      await h.elapse(1000);
      const id = tickRunId('every-second', Math.floor(now) + s);
      await until(`run ${id} completed`, async () => (await h!.store.getRun(id))?.status === 'completed');
    }
    const runs = await h.store.listRuns({ claimTtlMs: 30_000 });
    expect(runs.map((r) => r.id).sort()).toEqual(
      [1, 2, 3, 4, 5].map((s) => tickRunId('every-second', Math.floor(now) + s)),
    );
  });

  it('overlap cancel cancels the previous run through its transition, with its event', async () => {
    h = await sqliteBackend.open();
    const hour = Math.floor((await h.now()) / 3600) * 3600;
    await h.store.createRun({ id: 'previous', workflow: 'tick', inputJson: '{"n":1}', totalSteps: null });
    await h.store.createSchedule({
      name: 'fresh',
      workflow: 'tick',
      cron: '0 0 * * * *',
      timeZone: 'UTC',
      inputJson: '{"n":1}',
      overlap: 'cancel',
      catchUp: 'latest',
      catchUpCap: 10,
      source: 'operator',
      nextFireAt: hour,
    });
    await h.exec(`UPDATE schedules SET last_run_id = 'previous'`);
    const outcome = await fireSchedules(h.store, silentLogger);
    expect(outcome.fired.map((f) => f.runId)).toEqual([tickRunId('fresh', hour)]);
    expect(await h.store.getRun('previous')).toMatchObject({ status: 'cancelled' });
    const events = await h.store.listEvents('previous');
    expect(events.map((e) => e.detail)).toContain('cancel by schedule fresh: queued → cancelled');
  });

  it('gives a scheduled run what a start takes from its workflow: its priority and steps', async () => {
    h = await sqliteBackend.open();
    const urgent = defineWorkflow({
      name: 'urgent',
      input: z.object({}),
      priority: 7,
      totalSteps: 2,
      run: async () => null,
    });
    const served = new WorkflowRegistry([urgent]);
    await h.store.registerWorker({ id: 'w', host: 'h', pid: 1 });
    await h.store.publishWorkflows('w', publicationsOf(served));
    await h.store.createSchedule({
      name: 'pager',
      workflow: 'urgent',
      cron: '* * * * * *',
      timeZone: 'UTC',
      inputJson: '{}',
      overlap: 'skip',
      catchUp: 'latest',
      catchUpCap: 10,
      source: 'operator',
      nextFireAt: Math.floor(await h.now()),
    });
    const [fired] = (await fireSchedules(h.store, silentLogger)).fired;
    const started = await startRun(h.store, served, { workflow: 'urgent', input: {}, id: 'by-hand' });
    expect(await h.store.getRun(fired!.runId)).toMatchObject({
      priority: started.priority,
      totalSteps: started.totalSteps,
    });
    expect(started).toMatchObject({ priority: 7, totalSteps: 2 });
  });

  it('refuses a declared schedule naming the field, when the workflow is defined', () => {
    const bad = (schedule: object) => () =>
      defineWorkflow({ name: 'bad', input: z.object({}), schedules: [schedule as never], run: async () => null });
    expect(bad({ name: 'x', cron: 'nope' })).toThrow(InvalidInputError);
    expect(bad({ name: 'x', cron: 'nope' })).toThrow(/schedules\[0\]: cron: must have five fields .*; this has 1/);
    expect(bad({ name: 'x', cron: '61 * * * *' })).toThrow(/schedules\[0\]: cron: Invalid value for minute: 61/);
    expect(bad({ name: 'x', cron: '* * * * *', timeZone: 'Mars/Base' })).toThrow(
      /schedules\[0\]: timeZone: unknown time zone "Mars\/Base"/,
    );
    expect(bad({ name: 'x', cron: '* * * * *', overlap: 'maybe' })).toThrow(
      /overlap: must be one of skip, queue, cancel/,
    );
    // A cap is read by catch-up all only: declared with another policy it would be kept and never read.
    expect(bad({ name: 'x', cron: '* * * * *', catchUpCap: 5 })).toThrow(
      'schedules[0]: catchUpCap: only with catch-up all (latest fires one missed tick, none fires none)',
    );
    expect(bad({ name: 'x', cron: '* * * * *', catchUp: 'none', catchUpCap: 5 })).toThrow(/catchUpCap: only with/);
    expect(bad({ name: 'x', cron: '* * * * *', catchUp: 'all', catchUpCap: 5 })).not.toThrow();
    // croner would read a seventh field as the year; a schedule has five, or six with seconds first.
    expect(bad({ name: 'x', cron: '0 0 0 1 1 * 2030' })).toThrow(
      'schedules[0]: cron: must have five fields (minute hour day month weekday), or six with seconds first; this has 7',
    );
  });
});
