/**
 * Schedules on every backend: kept, paused, resumed and deleted; fired once per tick however many stores fire
 * at once, each tick's run named after the schedule and the tick; a firing deferred by overlap `queue` writes
 * nothing. The ticks are hourly and start hours back, so the store's clock (moving by itself on PostgreSQL)
 * never brings a new one during a test.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { scheduleView } from '../../lib/control/schedules';
import { planFiring } from '../../lib/engine/schedules/policy';
import { ConflictError, NotFoundError } from '../../lib/errors';
import { type ScheduleDefinition, type Store, tickRunId } from '../../lib/store/contract';
import { backends, type StoreHandle } from '../support/backends';

const list = await backends();

/**
 * Moves the store's clock to half past an hour and answers that hour: catch-up `none` judges lateness by the
 * minute, so no tick may be near whatever the time the test starts at.
 */
async function halfPast(h: StoreHandle): Promise<number> {
  const offset = (await h.now()) % 3600;
  await h.elapse(Math.round((((1800 - offset) % 3600) + 3600) % 3600) * 1000);
  return Math.floor((await h.now()) / 3600) * 3600;
}

const hourly = (name: string, more: Partial<ScheduleDefinition> = {}): ScheduleDefinition => ({
  name,
  workflow: 'report',
  cron: '0 0 * * * *',
  timeZone: 'UTC',
  inputJson: '{"to":"ops"}',
  overlap: 'skip',
  catchUp: 'all',
  catchUpCap: 10,
  ...more,
});

describe.each(list)('schedules on $name', (backend) => {
  let h: StoreHandle;
  let store: Store;
  let hour: number;

  beforeEach(async () => {
    h = await backend.open();
    store = h.store;
    hour = Math.floor((await h.now()) / 3600) * 3600;
  });
  afterEach(() => h.close());

  it('keeps, pauses, resumes and deletes a schedule; a taken name is refused', async () => {
    const created = await store.createSchedule({ ...hourly('nightly'), source: 'operator', nextFireAt: hour + 3600 });
    expect(created).toMatchObject({ name: 'nightly', paused: false, source: 'operator', nextFireAt: hour + 3600 });
    await expect(
      store.createSchedule({ ...hourly('nightly'), source: 'operator', nextFireAt: hour }),
    ).rejects.toBeInstanceOf(ConflictError);
    expect(await store.setSchedulePaused('nightly', true)).toMatchObject({ paused: true, nextFireAt: hour + 3600 });
    expect(await store.setSchedulePaused('nightly', false, hour + 7200)).toMatchObject({
      paused: false,
      nextFireAt: hour + 7200,
    });
    // Resuming a running schedule changes nothing, its next tick included.
    expect(await store.setSchedulePaused('nightly', false, hour)).toBeNull();
    expect(await store.getSchedule('nightly')).toMatchObject({ paused: false, nextFireAt: hour + 7200 });
    await expect(store.setSchedulePaused('nope', true)).rejects.toBeInstanceOf(NotFoundError);
    expect((await store.listSchedules()).map((s) => s.name)).toEqual(['nightly']);
    expect(await store.deleteSchedule('nightly')).toBe(true);
    expect(await store.deleteSchedule('nightly')).toBe(false);
    expect(await store.getSchedule('nightly')).toBeNull();
  });

  it('fires each due tick once, however many stores fire at once', async () => {
    await store.createSchedule({ ...hourly('hourly'), source: 'operator', nextFireAt: hour - 7200 });
    const other = await h.reopen();
    const [a, b] = await Promise.all([store.fireDueSchedules(planFiring), other.fireDueSchedules(planFiring)]);
    const fired = [...a.fired, ...b.fired];
    const ids = [hour - 7200, hour - 3600, hour].map((t) => tickRunId('hourly', t));
    expect(fired.filter((f) => f.created).map((f) => f.runId)).toEqual(ids);
    expect(ids[2]).toBe(`hourly:${new Date(hour * 1000).toISOString().replace('.000Z', 'Z')}`);
    for (const id of ids) expect(await store.getRun(id)).toMatchObject({ workflow: 'report', status: 'queued' });
    expect(await store.getSchedule('hourly')).toMatchObject({
      nextFireAt: hour + 3600,
      lastTickAt: hour,
      lastRunId: ids[2],
    });
    expect((await store.fireDueSchedules(planFiring)).fired).toEqual([]);
  });

  // An expression whose ticks run out (a year that passes) was held at its due time: its last tick never fired,
  // and it took a place in every firing's pick for good.
  it('fires the last tick of an expression that has no more, and then is never due', async () => {
    const at = new Date(hour * 1000);
    const cron = `0 0 ${at.getUTCHours()} ${at.getUTCDate()} ${at.getUTCMonth() + 1} * ${at.getUTCFullYear()}`;
    await store.createSchedule({ ...hourly('once', { cron }), source: 'operator', nextFireAt: hour });
    const fired = await store.fireDueSchedules(planFiring);
    expect(fired.fired.map((f) => [f.runId, f.created])).toEqual([[tickRunId('once', hour), true]]);
    expect(await store.getSchedule('once')).toMatchObject({ nextFireAt: Number.POSITIVE_INFINITY, lastTickAt: hour });
    await h.elapse(1000);
    expect((await store.fireDueSchedules(planFiring)).fired).toEqual([]);
    expect((await store.listSchedules()).map((r) => [r.name, r.nextFireAt])).toEqual([
      ['once', Number.POSITIVE_INFINITY],
    ]);
    // As the page, the API and the CLI show it: finished, with no next tick.
    expect(scheduleView((await store.getSchedule('once'))!)).toMatchObject({ nextFireAt: null, finished: true });
  });

  it('leaves a paused schedule alone, and a queued tick due while the previous run goes', async () => {
    await store.createSchedule({ ...hourly('held'), source: 'operator', nextFireAt: hour, paused: true });
    await store.createSchedule({
      ...hourly('serial', { overlap: 'queue', catchUp: 'latest' }),
      source: 'operator',
      nextFireAt: hour - 3600,
    });
    const first = await store.fireDueSchedules(planFiring);
    expect(first.fired.map((f) => f.runId)).toEqual([tickRunId('serial', hour)]);
    // The run of the last tick is still queued: the next tick waits for it, with nothing written.
    await h.exec(`UPDATE schedules SET next_fire_at = ${hour} WHERE name = 'serial'`);
    const before = await store.getSchedule('serial');
    expect((await store.fireDueSchedules(planFiring)).fired).toEqual([]);
    expect(await store.getSchedule('serial')).toEqual(before);
    expect(await store.getRun(tickRunId('held', hour))).toBeNull();
  });

  it('overlap cancel fires and names the previous run for the caller to cancel, never the tick it fired', async () => {
    await store.createRun({ id: 'previous', workflow: 'report', inputJson: '{}', totalSteps: null });
    await store.createSchedule({
      ...hourly('fresh', { overlap: 'cancel', catchUp: 'latest' }),
      source: 'operator',
      nextFireAt: hour - 3600,
    });
    await h.exec(`UPDATE schedules SET last_run_id = 'previous'`);
    const fired = await store.fireDueSchedules(planFiring);
    expect(fired).toEqual({
      fired: [{ schedule: 'fresh', tick: hour, runId: tickRunId('fresh', hour), created: true }],
      cancel: [{ schedule: 'fresh', runId: 'previous' }],
    });
    // The same tick due again (an operator moved it back): its own run is the previous one, and stays.
    await h.exec(`UPDATE schedules SET next_fire_at = ${hour}`);
    expect(await store.fireDueSchedules(planFiring)).toEqual({
      fired: [{ schedule: 'fresh', tick: hour, runId: tickRunId('fresh', hour), created: false }],
      cancel: [],
    });
  });

  it('fires the schedules due past any number that overlap queue holds, once however many stores fire', async () => {
    hour = await halfPast(h);
    await store.createRun({ id: 'previous', workflow: 'report', inputJson: '{}', totalSteps: null });
    const queued = ['q1', 'q2', 'q3'];
    for (const name of queued)
      await store.createSchedule({
        ...hourly(name, { overlap: 'queue', catchUp: 'latest' }),
        source: 'operator',
        nextFireAt: hour - 7200,
      });
    await h.exec(`UPDATE schedules SET last_run_id = 'previous'`);
    await store.createSchedule({
      ...hourly('free', { catchUp: 'latest' }),
      source: 'operator',
      nextFireAt: hour - 3600,
    });
    const held = (await store.listSchedules()).filter((s) => queued.includes(s.name));
    const other = await h.reopen();
    // More held schedules than a firing reads, all due before the free one: they used to fill the read, and hold it.
    const [a, b] = await Promise.all([
      store.fireDueSchedules(planFiring, { limit: 2 }),
      other.fireDueSchedules(planFiring, { limit: 2 }),
    ]);
    expect([...a.fired, ...b.fired].filter((f) => f.created).map((f) => f.runId)).toEqual([tickRunId('free', hour)]);
    expect((await store.listSchedules()).filter((s) => queued.includes(s.name))).toEqual(held);
    // The previous run ends: each held tick fires, once and alone; the latest after it stays due.
    await store.actOnRun('previous', 'cancel', 'tester');
    const created = async () => {
      const fired = [];
      for (let i = 0; i < 3; i++) fired.push(...(await store.fireDueSchedules(planFiring, { limit: 2 })).fired);
      return fired
        .filter((f) => f.created)
        .map((f) => f.runId)
        .sort();
    };
    expect(await created()).toEqual(queued.map((name) => tickRunId(name, hour - 7200)));
    expect((await store.listSchedules()).filter((s) => queued.includes(s.name)).map((s) => s.nextFireAt)).toEqual([
      hour,
      hour,
      hour,
    ]);
    // Their runs end: the latest fires, once each.
    for (const name of queued) await store.actOnRun(tickRunId(name, hour - 7200), 'cancel', 'tester');
    expect(await created()).toEqual(queued.map((name) => tickRunId(name, hour)));
  });

  it('overlap queue fires the tick it held when the previous run ends, however late, even with catch-up none', async () => {
    hour = await halfPast(h);
    await store.createRun({ id: 'previous', workflow: 'report', inputJson: '{}', totalSteps: null });
    await store.createSchedule({
      ...hourly('serial', { overlap: 'queue', catchUp: 'none' }),
      source: 'operator',
      nextFireAt: hour - 3600,
    });
    await h.exec(`UPDATE schedules SET last_run_id = 'previous'`);
    expect((await store.fireDueSchedules(planFiring)).fired).toEqual([]);
    await store.actOnRun('previous', 'cancel', 'tester');
    const held = tickRunId('serial', hour - 3600);
    expect((await store.fireDueSchedules(planFiring)).fired).toEqual([
      { schedule: 'serial', tick: hour - 3600, runId: held, created: true },
    ]);
    expect(await store.getSchedule('serial')).toMatchObject({ nextFireAt: hour + 3600, lastRunId: held });
    // Its run ends before the next tick, and no worker fires for two hours: those ticks were missed, not held.
    await store.actOnRun(held, 'cancel', 'tester');
    await h.elapse(2 * 3600_000);
    expect((await store.fireDueSchedules(planFiring)).fired).toEqual([]);
    expect(await store.getSchedule('serial')).toMatchObject({ nextFireAt: hour + 3 * 3600, lastRunId: held });
  });

  it("gives a tick's run its workflow's published steps and default priority, as a start does", async () => {
    await store.registerWorker({ id: 'w-1', host: 'h', pid: 1, slots: 4 });
    await store.publishWorkflows('w-1', [
      {
        name: 'report',
        description: null,
        inputSchemaJson: '{}',
        totalSteps: 3,
        version: null,
        limits: { priority: 7 },
      },
    ]);
    await store.createSchedule({ ...hourly('urgent', { catchUp: 'latest' }), source: 'operator', nextFireAt: hour });
    await store.fireDueSchedules(planFiring);
    expect(await store.getRun(tickRunId('urgent', hour))).toMatchObject({ priority: 7, totalSteps: 3 });
  });

  it('upserts the schedules code declares: a paused one stays paused, one dropped from the code goes', async () => {
    await store.createSchedule({ ...hourly('mine'), source: 'operator', nextFireAt: hour });
    await store.upsertDefinedSchedules(
      ['report'],
      [
        { ...hourly('a'), nextFireAt: hour + 3600 },
        { ...hourly('b'), nextFireAt: hour + 3600 },
        { ...hourly('mine', { cron: '0 0 0 * * *' }), nextFireAt: hour + 3600 },
      ],
    );
    await store.setSchedulePaused('a', true);
    await store.upsertDefinedSchedules(
      ['report'],
      [{ ...hourly('a', { inputJson: '{"to":"all"}' }), nextFireAt: hour + 7200 }],
    );
    const rows = await store.listSchedules();
    expect(rows.map((s) => [s.name, s.source, s.paused, s.inputJson, s.nextFireAt])).toEqual([
      ['a', 'definition', true, '{"to":"all"}', hour + 3600],
      ['mine', 'operator', false, '{"to":"ops"}', hour],
    ]);
  });
});
