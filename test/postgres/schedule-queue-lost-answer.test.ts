/**
 * An overlap `queue` firing whose COMMIT answer is lost: the firing ran and committed (the held tick's run, and
 * the tick catch-up keeps left due), the client sees a dead connection and retries the whole firing. The retry
 * finds the schedule still due, as the kept tick is, and the held tick's run going: it fires nothing beside it.
 * When that run ends, the kept tick fires, alone and once.
 */
import { describe, expect, it, onTestFinished } from 'vitest';
import { planFiring } from '../../lib/engine/schedules/policy';
import { tickRunId } from '../../lib/store/contract';
import { openPostgresStore } from '../../lib/store/postgres';
import { postgresAvailable, startPgProxy, testSchema, testUrl } from '../support/postgres';

const pgUp = await postgresAvailable('PostgreSQL lost schedule firing answers');
const HOUR = 3600;

describe.skipIf(!pgUp)('postgres: an overlap queue firing whose answer is lost, retried', () => {
  it('fires the held tick once and nothing beside it; the kept tick when its run ends', async () => {
    const schema = await testSchema('wb_lost_fire');
    const proxy = await startPgProxy(testUrl());
    onTestFinished(() => proxy.close());
    const store = await openPostgresStore({ url: proxy.url, schema: schema.name, poolSize: 2 });
    onTestFinished(() => store.close());

    // A day back: the ticks after the held one are many, whenever the test runs, and the latest is kept.
    const held = Math.floor(Date.now() / 1000 / HOUR) * HOUR - 24 * HOUR;
    await store.createRun({ id: 'previous', workflow: 'report', inputJson: '{}', totalSteps: null });
    await store.createSchedule({
      name: 'serial',
      workflow: 'report',
      cron: '0 0 * * * *',
      timeZone: 'UTC',
      inputJson: '{}',
      overlap: 'queue',
      catchUp: 'latest',
      catchUpCap: 10,
      source: 'operator',
      nextFireAt: held,
    });
    await schema.admin.query(`UPDATE ${schema.t('schedules')} SET last_run_id = 'previous'`);
    expect((await store.fireDueSchedules(planFiring)).fired).toEqual([]);
    await store.actOnRun('previous', 'cancel', 'tester');

    proxy.loseAnswerTo('COMMIT');
    expect((await store.fireDueSchedules(planFiring)).fired).toEqual([]);
    expect(proxy.lost).toBe(1);
    const schedule = (await store.getSchedule('serial'))!;
    const kept = schedule.nextFireAt;
    expect(kept).toBeGreaterThan(held + 12 * HOUR);
    expect(schedule.lastRunId).toBe(tickRunId('serial', held));
    const runs = async () =>
      (await store.listRuns({ search: 'serial:', claimTtlMs: 30_000 })).map((r) => [r.id, r.status]).sort();
    expect(await runs()).toEqual([[tickRunId('serial', held), 'queued']]);
    expect((await store.fireDueSchedules(planFiring)).fired).toEqual([]);

    await store.actOnRun(tickRunId('serial', held), 'cancel', 'tester');
    expect((await store.fireDueSchedules(planFiring)).fired).toEqual([
      { schedule: 'serial', tick: kept, runId: tickRunId('serial', kept), created: true },
    ]);
    expect(await runs()).toEqual([
      [tickRunId('serial', held), 'cancelled'],
      [tickRunId('serial', kept), 'queued'],
    ]);
  });
});
