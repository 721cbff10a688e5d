/**
 * The proof: a schedule firing every second for 60 s, three real `waybill worker` processes on
 * PostgreSQL, two of them SIGKILLed and restarted during the minute. Every tick of the minute has exactly one
 * run (its id is the schedule and the tick, so none can be twice; and none is missing), and each run delivered
 * its one message once. Real time: the assertion is a count of ticks, not a margin.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it, onTestFinished } from 'vitest';
import { readOutbox } from '../../lib/engine/workflows/outbox';
import { tickRunId } from '../../lib/store/contract';
import { BIN, ROOT, runCli } from '../cli/support';
import { makeTarget, type Target, targetKinds } from '../support/targets';
import { tempDir } from '../support/tmp';
import { until } from '../support/until';

const postgres = (await targetKinds('schedule process tests')).includes('postgres');

function startWorker(target: Target, id: string, env: Record<string, string>): ChildProcess {
  const child = spawn(process.execPath, [BIN, 'worker', '--id', id], {
    cwd: ROOT,
    stdio: ['ignore', 'ignore', 'pipe'],
    env: { ...process.env, DATABASE_URL: target.url, ...env },
  });
  child.stderr!.resume();
  onTestFinished(async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGKILL');
      await once(child, 'exit');
    }
  });
  return child;
}

async function cli(target: Target, args: string[]): Promise<string> {
  const result = await runCli(args, { env: { DATABASE_URL: target.url } });
  if (result.code !== 0) throw new Error(`waybill ${args.join(' ')} exited ${result.code}: ${result.stderr}`);
  return result.stdout;
}

describe.skipIf(!postgres)('a schedule every second on PostgreSQL', () => {
  it('fires exactly one run per tick for a minute, across three workers and two SIGKILLs', async () => {
    const target = await makeTarget('postgres');
    const data = tempDir('waybill-schedule-outbox-');
    const env = {
      WAYBILL_HEARTBEAT_MS: '100',
      WAYBILL_RUN_LEASE_MS: '5000',
      WAYBILL_LEASE_MS: '5000',
      WAYBILL_DATA_DIR: data.path,
    };
    const store = await target.store();
    const workers = ['a', 'b', 'c'].map((name) => ({
      name,
      generation: 0,
      child: startWorker(target, `${name}-0`, env),
    }));
    // Overlap queue with catch-up all: a tick whose previous run is still going (its worker just killed) waits
    // for it and then fires, so every tick of the minute gets its run.
    await cli(target, [
      'schedule',
      'add',
      'every-second',
      'notify',
      '--cron',
      '* * * * * *',
      '--input',
      JSON.stringify({ count: 1, outbox: 'outbox.jsonl' }),
      '--overlap',
      'queue',
      '--catch-up',
      'all',
      '--catch-up-cap',
      '100',
    ]);
    const first = (await store.getSchedule('every-second'))!.nextFireAt;

    const killAndRestart = async (index: number) => {
      const w = workers[index]!;
      w.child.kill('SIGKILL');
      await once(w.child, 'exit');
      w.child = startWorker(target, `${w.name}-${++w.generation}`, env);
    };
    const startedAt = Date.now();
    const at = (s: number) => sleep(Math.max(0, startedAt + s * 1000 - Date.now()));
    await at(17);
    await killAndRestart(0);
    await at(38);
    await killAndRestart(1);
    // The minute's last tick is first + 59: pause once it has come and gone.
    await until('the minute to pass', async () => (await store.getSchedule('every-second'))!.nextFireAt > first + 59);
    await cli(target, ['schedule', 'pause', 'every-second']);
    const last = (await store.getSchedule('every-second'))!.lastTickAt!;

    const ticks = Array.from({ length: last - first + 1 }, (_, i) => first + i);
    const ids = ticks.map((t) => tickRunId('every-second', t));
    const completed = async () =>
      (await Promise.all(ids.map((id) => store.getRun(id)))).filter((r) => r?.status === 'completed').length;
    await until('every tick run to complete', async () => (await completed()) === ids.length, {
      timeoutMs: 60_000,
      intervalMs: 250,
      progress: completed,
    });
    const runs = await store.listRuns({ search: 'every-second:', limit: 500, claimTtlMs: 30_000 });
    // One run per tick, no tick missing and none twice: the minute's 60 ticks, and those that came while the
    // pause was on its way (a CLI process: how many depends on how busy the machine is, so they are held to the
    // same rule, not counted).
    expect(runs.map((r) => r.id).sort()).toEqual(ids);
    expect(ticks.length).toBeGreaterThanOrEqual(60);
    // The minute itself, bounded on both sides by the store's tick times rather than by how fast the pause came:
    // each run's tick read back from its own id (`<schedule>:<tick>`), no tick twice, and exactly the 60 ticks
    // first … first + 59 inside [first, first + 60). The issue's ± 1 is for a minute drawn on a clock; drawn on
    // the ticks, an extra run (a tick fired at a time the cron never names, or one tick under two ids) or a
    // missing one moves the count. And none fired before its tick, by the store's clock.
    const fired = runs.map((r) => ({ tick: Date.parse(r.id.slice('every-second:'.length)) / 1000, at: r.createdAt }));
    expect(fired.every(({ tick }) => Number.isInteger(tick))).toBe(true);
    expect(new Set(fired.map(({ tick }) => tick)).size).toBe(runs.length);
    expect(fired.filter(({ tick }) => tick >= first && tick < first + 60)).toHaveLength(60);
    expect(fired.filter(({ tick }) => tick < first)).toEqual([]);
    expect(fired.filter(({ tick, at }) => at === null || at < tick)).toEqual([]);
    const mail = readOutbox(data.file('outbox.jsonl'));
    expect(mail.byKey.size).toBe(ids.length);
    expect([...mail.byKey.values()].every((n) => n === 1)).toBe(true);
    expect(workers.map((w) => w.generation)).toEqual([1, 1, 0]);
    // Only a hang guard: the minute is drawn on the store's ticks, and a busy machine fires them late.
  }, 420_000);
});
