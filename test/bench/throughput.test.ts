/**
 * `npm run bench -- --json --only throughput` with a one-second window: the JSON carries issue #17's
 * throughput section (with what each process spent, which the README's table is built from), the bench
 * leaves no worker, schema or temporary file behind, and a bad flag is refused before anything runs.
 * Shape only: what the figures are depends on the machine, and no assertion here does.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { spawnCommand } from '../support/child';
import { Admin, postgresAvailable, TEST_DATABASE_URL } from '../support/postgres';
import { tempDir } from '../support/tmp';

const BENCH = fileURLToPath(new URL('../../bench/index.ts', import.meta.url));
const pgUp = await postgresAvailable('bench throughput (its PostgreSQL half)');

/** Pids of the processes whose command line holds `text`. */
function processesMentioning(text: string): number[] {
  return readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry))
    .filter((pid) => {
      try {
        return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(text);
      } catch {
        return false; // gone meanwhile
      }
    })
    .map(Number);
}

function bench(args: string[], env: Record<string, string> = {}) {
  return spawnCommand(process.execPath, ['--import', 'tsx', BENCH, ...args], {
    env: { TEST_DATABASE_URL, ...env },
  });
}

const machine = { machinePct: expect.any(Number), othersPct: expect.any(Number), iowaitPct: expect.any(Number) };
/** A process that used no CPU tick (10 ms) in a one-second window has no kernel share to speak of. */
const shareOrNull = {
  asymmetricMatch: (value: unknown) => value === null || (typeof value === 'number' && value >= 0 && value <= 1),
  toString: () => 'a share between 0 and 1, or null',
};
/** Counted over a window of their own after the timed one, which keeps its checkpoints. */
const walPerStep = { walPages: expect.any(Number), commits: expect.any(Number), fsyncs: expect.any(Number) };
const spending = {
  perSecond: { min: expect.any(Number), max: expect.any(Number) },
  diskFlushesPerSec: expect.any(Number),
  flushesPerStep: expect.any(Number),
};

describe('npm run bench -- --only throughput', () => {
  it('prints the throughput section of both backends and leaves nothing behind', { timeout: 300_000 }, async () => {
    const tmp = tempDir('waybill-bench-test-');
    // The bench's temporary files go where TMPDIR says, so what it leaves is what this directory holds after.
    // Two rounds, so that what is printed is their medians.
    const child = bench(['--json', '--only', 'throughput', '--duration', '1', '--windows', '2'], { TMPDIR: tmp.path });
    const exit = await child.exited;
    expect(exit.code, child.stderr()).toBe(0);
    const { throughput } = JSON.parse(child.lines.at(-1)!);

    expect(throughput.sqlite).toEqual({
      runs: 64,
      stepsPerSec: expect.any(Number),
      floorStepsPerSec: expect.any(Number),
      floorRatio: expect.any(Number),
      windowSec: expect.any(Number),
      rounds: 2,
      ...spending,
      cpu: { workerPct: expect.any(Number), benchPct: expect.any(Number), ...machine },
      cpuUsPerStep: { worker: expect.any(Number), bench: expect.any(Number) },
      kernelShare: { worker: expect.any(Number), bench: shareOrNull },
      perStep: walPerStep,
      perStepFrom: expect.stringMatching(/counting window after the timed one/),
      floor: {
        ...spending,
        cpu: { benchPct: expect.any(Number), ...machine },
        cpuUsPerStep: { bench: expect.any(Number) },
        kernelShare: { bench: shareOrNull },
        perStep: walPerStep,
        perStepFrom: expect.stringMatching(/counting window after the timed one/),
      },
    });
    // A step writes some pages but not a hundred; the floor commits (and syncs) each of its steps once.
    for (const side of [throughput.sqlite, throughput.sqlite.floor]) {
      expect(side.perStep.walPages).toBeGreaterThan(0);
      expect(side.perStep.walPages).toBeLessThan(100);
      expect(side.perStep.fsyncs).toBe(side.perStep.commits);
    }
    expect(throughput.sqlite.floor.perStep.commits).toBeCloseTo(1, 1);
    // Something was committed in the window by each side: a counter stuck at zero would print a rate of 0.
    expect(throughput.sqlite.stepsPerSec).toBeGreaterThan(0);
    expect(throughput.sqlite.floorStepsPerSec).toBeGreaterThan(0);
    expect(throughput.sqlite.windowSec).toBeGreaterThanOrEqual(1);
    // tsx keeps its compile cache there too (tsx-<uid>); the bench's own directories are waybill-bench-*.
    expect(readdirSync(tmp.path).filter((name) => name.startsWith('waybill-bench-'))).toEqual([]);
    // Every worker it started (ids waybill-tp-<bench pid>-…) has exited.
    expect(processesMentioning(`waybill-tp-${child.pid}-`)).toEqual([]);

    if (!pgUp) {
      expect(throughput.postgres).toBeUndefined();
      return;
    }
    expect(throughput.postgres).toMatchObject({
      runs: 64,
      workers: 4,
      stepsPerSec: expect.any(Number),
      floorStepsPerSec: expect.any(Number),
      roundTripsPerStep: expect.any(Number),
      rounds: 2,
      perSecond: spending.perSecond,
      cpu: { workerPct: expect.any(Number), benchPct: expect.any(Number), ...machine },
      cpuUsPerStep: { worker: expect.any(Number), bench: expect.any(Number) },
      floor: { perSecond: spending.perSecond, cpu: { benchPct: expect.any(Number), ...machine } },
    });
    // The server's processes and disk are only read when it runs on this machine.
    if (['127.0.0.1', 'localhost', '[::1]'].includes(new URL(TEST_DATABASE_URL).hostname)) {
      expect(throughput.postgres).toMatchObject({
        ...spending,
        cpu: { pgPct: expect.any(Number) },
        cpuUsPerStep: { pg: expect.any(Number) },
        floor: { ...spending, cpu: { pgPct: expect.any(Number) } },
      });
      // The rounds' own ratios' median, each round's product against its own floor.
      expect(throughput.postgres.cpuRatio).toBeGreaterThan(0);
      for (const side of [throughput.postgres, throughput.postgres.floor]) {
        const { clientCpuUs, backendCpuUs, totalCpuUs } = side.perStep;
        expect(clientCpuUs).toBeGreaterThan(0);
        expect(backendCpuUs).toBeGreaterThanOrEqual(0);
        expect(totalCpuUs).toBeCloseTo(clientCpuUs + backendCpuUs, 1);
        expect(side.perStepFrom).toBe('the timed window');
      }
      // /proc charges CPU a tick (10 ms) at a time. In a 1 s window on a starved machine (CI beside other suites)
      // one side can commit so few steps that its backends are charged no tick at all, and read 0 (seen once in
      // a fresh-clone CI); a reader of the wrong processes would read 0 on both sides.
      expect(throughput.postgres.perStep.backendCpuUs + throughput.postgres.floor.perStep.backendCpuUs).toBeGreaterThan(
        0,
      );
    }
    expect(throughput.postgres.stepsPerSec).toBeGreaterThan(0);
    expect(throughput.postgres.floorStepsPerSec).toBeGreaterThan(0);
    // The counter in the workers saw their queries: a step costs some round trip, batched or not.
    expect(throughput.postgres.roundTripsPerStep).toBeGreaterThan(0);
    const admin = await Admin.connect();
    try {
      const left = await admin.count('SELECT count(*) FROM pg_namespace WHERE nspname LIKE $1', [
        `waybill\\_tp\\_${child.pid}\\_%`,
      ]);
      expect(left).toBe(0);
    } finally {
      await admin.end();
    }
  });

  it.each([
    [['--duration', '0'], '--duration: '],
    [['--duration', '1.5'], '--duration: needs a whole number'],
    [['--duration', '601'], '--duration: '],
    [['--only', 'throughputs'], '--only: '],
    [['--only', 'grown', '--backend', 'mysql'], '--backend: '],
    [['--only', 'grown', '--windows', '0'], '--windows: '],
    [['--only', 'throughput', '--windows', '22'], '--windows: '],
  ])('refuses %j, naming the flag, before measuring anything', async (args, message) => {
    const child = bench(args);
    const exit = await child.exited;
    expect(exit.code).toBe(2);
    expect(child.stderr()).toContain(`bench: ${message}`);
    expect(child.lines).toEqual([]);
  });
});
