/**
 * Overlap `queue` on every backend, with runs that take longer than several ticks: never two of the schedule's
 * runs going at once. When a run ends, the tick it held fires alone, and the ticks catch-up keeps stay due, to
 * fire one at a time after it (latest: one, the latest; all: the most recent `catchUpCap`, in order; none: no
 * other). Overlap `skip` and `cancel` are what they were. Two stores fire at every step, as two workers would, so
 * each tick is also seen to make one run.
 *
 * The ticks are hourly and the clock starts at half past an hour: the store's clock (moving by itself on
 * PostgreSQL) never brings a tick during a step, only the test's jumps do. A run "takes" as long as the test
 * lets it: it goes until the test cancels it.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { silentLogger } from '../../lib/engine/log';
import { fireSchedules } from '../../lib/engine/schedules/fire';
import { type CatchUpPolicy, type OverlapPolicy, type Store, tickRunId } from '../../lib/store/contract';
import { GOING_STATUSES } from '../../lib/store/shared/schedules';
import { backends, type StoreHandle } from '../support/backends';

const list = await backends();
const HOUR = 3600;

describe.each(list)('overlap queue on $name', (backend) => {
  let h: StoreHandle;
  let store: Store;
  let other: Store;
  /** The hour the test starts in: ticks are named by their hours after it. */
  let hour: number;
  /** Every run the schedule's firings created, by tick (hours after `hour`), in the order they were created. */
  let created: number[];

  beforeEach(async () => {
    h = await backend.open();
    store = h.store;
    other = await h.reopen();
    const offset = (await h.now()) % HOUR;
    await h.elapse(Math.round((((1800 - offset) % HOUR) + HOUR) % HOUR) * 1000);
    hour = Math.floor((await h.now()) / HOUR) * HOUR;
    created = [];
  });
  afterEach(() => h.close());

  const id = (tick: number) => tickRunId('serial', hour + tick * HOUR);

  async function schedule(overlap: OverlapPolicy, catchUp: CatchUpPolicy, catchUpCap = 10): Promise<void> {
    await store.createSchedule({
      name: 'serial',
      workflow: 'report',
      cron: '0 0 * * * *',
      timeZone: 'UTC',
      inputJson: '{}',
      overlap,
      catchUp,
      catchUpCap,
      source: 'operator',
      nextFireAt: hour + HOUR,
    });
  }

  /** The schedule's runs not ended, by tick. */
  async function going(): Promise<number[]> {
    const rows = await h.rows<{ id: string }>(
      `SELECT id FROM runs WHERE id LIKE 'serial:%' AND status IN (${GOING_STATUSES.map((s) => `'${s}'`).join(', ')})`,
    );
    return rows.map((r) => (Date.parse(r.id.slice('serial:'.length)) / 1000 - hour) / HOUR).sort((a, b) => a - b);
  }

  /**
   * Two workers' turns at once: the ticks whose runs they created (hours after `hour`). Checks after each that
   * at most one of the schedule's runs goes.
   */
  async function fire(): Promise<number[]> {
    const outcomes = await Promise.all([fireSchedules(store, silentLogger), fireSchedules(other, silentLogger)]);
    const ticks = outcomes
      .flatMap((o) => o.fired)
      .filter((f) => f.created)
      .map((f) => (f.tick - hour) / HOUR)
      .sort((a, b) => a - b);
    created.push(...ticks);
    expect((await going()).length).toBeLessThanOrEqual(1);
    return ticks;
  }

  /** Lets the clock pass `hours`, with a firing at each whole hour's half past, as a worker firing all along. */
  async function hoursPass(hours: number): Promise<number[]> {
    const ticks: number[] = [];
    for (let i = 0; i < hours; i++) {
      await h.elapse(HOUR * 1000);
      ticks.push(...(await fire()));
    }
    return ticks;
  }

  const end = (tick: number) => store.actOnRun(id(tick), 'cancel', 'tester');
  const nextFireAt = async () => ((await store.getSchedule('serial'))!.nextFireAt - hour) / HOUR;

  it('latest: each end fires the next due tick alone, the latest missed, and drops the older ones', async () => {
    await schedule('queue', 'latest');
    expect(await hoursPass(1)).toEqual([1]);
    // Ticks 2, 3 and 4 come while the run of 1 goes: 2 is held, 4 kept, 3 dropped.
    expect(await hoursPass(3)).toEqual([]);
    await end(1);
    expect(await fire()).toEqual([2]);
    expect(await going()).toEqual([2]);
    expect(await nextFireAt()).toBe(4);
    expect(await fire()).toEqual([]);
    // Ticks 5 and 6 come while the run of 2 goes: 4 fires when it ends, then 6; 5 is dropped.
    expect(await hoursPass(2)).toEqual([]);
    await end(2);
    expect(await fire()).toEqual([4]);
    expect(await nextFireAt()).toBe(6);
    await end(4);
    expect(await fire()).toEqual([6]);
    expect(await nextFireAt()).toBe(7);
    await end(6);
    expect(await hoursPass(1)).toEqual([7]);
    expect(created).toEqual([1, 2, 4, 6, 7]);
    expect(await going()).toEqual([7]);
  });

  it('all: each end fires the next of the kept ticks, in order, up to the cap', async () => {
    await schedule('queue', 'all', 3);
    expect(await hoursPass(1)).toEqual([1]);
    // Ticks 2 … 6 come while the run of 1 goes: 2 is held, the 3 most recent (4, 5, 6) kept, 3 dropped.
    expect(await hoursPass(5)).toEqual([]);
    await end(1);
    expect(await fire()).toEqual([2]);
    expect(await nextFireAt()).toBe(4);
    // Tick 7 comes while the run of 2 goes: it joins the kept ones, still 3 with 4 firing.
    expect(await hoursPass(1)).toEqual([]);
    for (const [ended, next] of [
      [2, 4],
      [4, 5],
      [5, 6],
      [6, 7],
    ] as const) {
      await end(ended);
      expect(await fire()).toEqual([next]);
      expect(await going()).toEqual([next]);
      expect(await fire()).toEqual([]);
    }
    await end(7);
    expect(await fire()).toEqual([]);
    expect(await nextFireAt()).toBe(8);
    expect(created).toEqual([1, 2, 4, 5, 6, 7]);
  });

  it('none: each end fires the tick it held, and no other', async () => {
    await schedule('queue', 'none');
    // The run of tick 1 goes already (made here: a firing half an hour late is one catch-up none drops).
    await store.createRun({ id: id(1), workflow: 'report', inputJson: '{}', totalSteps: null });
    await h.exec(`UPDATE schedules SET last_run_id = '${id(1)}', next_fire_at = ${hour + 2 * HOUR}`);
    expect(await hoursPass(3)).toEqual([]);
    // To 10 s past tick 4: it is on time, and still not kept beside the held tick 2.
    await h.elapse((HOUR / 2 + 10) * 1000);
    expect(await fire()).toEqual([]);
    await end(1);
    expect(await fire()).toEqual([2]);
    expect(await nextFireAt()).toBe(5);
    // Tick 5 comes while the run of 2 goes, and is held.
    await h.elapse(HOUR * 1000);
    expect(await fire()).toEqual([]);
    await end(2);
    expect(await fire()).toEqual([5]);
    expect(await nextFireAt()).toBe(6);
    // The run of 5 ends before tick 6, which no worker fires until half an hour late: missed, and none drops it.
    await end(5);
    await h.elapse((HOUR + HOUR / 2 - 10) * 1000);
    expect(await fire()).toEqual([]);
    expect(await nextFireAt()).toBe(7);
    expect(created).toEqual([2, 5]);
  });

  it('skip drops the ticks that come while the run goes', async () => {
    await schedule('skip', 'latest');
    expect(await hoursPass(1)).toEqual([1]);
    expect(await hoursPass(2)).toEqual([]);
    await end(1);
    expect(await fire()).toEqual([]);
    expect(await nextFireAt()).toBe(4);
    expect(await hoursPass(1)).toEqual([4]);
    expect(created).toEqual([1, 4]);
  });

  it('cancel fires every tick, cancelling the run before it', async () => {
    await schedule('cancel', 'latest');
    expect(await hoursPass(3)).toEqual([1, 2, 3]);
    expect(await going()).toEqual([3]);
    expect((await store.getRun(id(1)))!.status).toBe('cancelled');
    expect((await store.getRun(id(2)))!.status).toBe('cancelled');
  });
});
