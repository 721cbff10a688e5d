/**
 * One throughput measurement: let the load warm up, then count what was committed over a window of steady
 * state, and read alongside what each process spent (bench/proc.ts). The rate is the committed count's
 * difference across the window over the window's length, so the warm-up (starting processes, taking runs,
 * filling pools, the JIT) is never in it, and neither is the drain after it. Nothing here knows how the
 * product writes (one transaction a step, or batches): it only counts what became durable.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { CORES, diskFlushes, machineCpu, processCpuSeconds, type MachineCpu } from './proc';

export interface WindowOptions {
  warmupMs: number;
  windowMs: number;
  /** How many steps have been committed so far, read from where they are durable. */
  committed: () => number | Promise<number>;
  /** The processes whose CPU is reported, by role (`worker`, `pg`, `bench`), read at both ends of the window. */
  processes: () => Record<string, number[]> | Promise<Record<string, number[]>>;
  /** A path on the disk whose flushes are counted (the database's directory), when it is on this machine. */
  disk?: string;
  /** Round trips the product has sent so far, when it can say. */
  roundTrips?: () => Promise<number>;
  /** Throws when the load is no longer what is being measured (a worker died, a run ended). */
  check?: () => void | Promise<void>;
}

export interface WindowFigure {
  steps: number;
  seconds: number;
  stepsPerSec: number;
  /** The lowest and highest rate of the window's seconds: how steady the steady state was. */
  perSecond: { min: number; max: number };
  /** CPU of each role's processes over the window, in percent of one core (this machine has CORES). */
  cpuPct: Record<string, number | null>;
  /** The whole machine over the window, percent of one core: busy, and idle waiting on I/O. */
  machine: { busyPct: number; iowaitPct: number; cores: number } | null;
  /** Flushes the database's disk completed per second, every process's included. */
  diskFlushesPerSec: number | null;
  roundTripsPerStep: number | null;
}

interface Snapshot {
  at: number;
  committed: number;
  cpu: Record<string, Map<number, number>>;
  machine: MachineCpu | null;
  flushes: number | null;
  roundTrips: number | null;
}

const SAMPLE_MS = 1000;

export async function measureWindow(options: WindowOptions): Promise<WindowFigure> {
  await sleep(options.warmupMs);
  await options.check?.();
  const start = await snapshot(options);
  const rates: number[] = [];
  let last = start;
  for (;;) {
    const left = options.windowMs - (performance.now() - start.at);
    if (left <= 0) break;
    await sleep(Math.min(SAMPLE_MS, left));
    const at = performance.now();
    const committed = await options.committed();
    const now = { at: (at + performance.now()) / 2, committed };
    if (now.at - last.at >= SAMPLE_MS / 2) rates.push(((now.committed - last.committed) * 1000) / (now.at - last.at));
    last = { ...last, ...now };
  }
  const end = await snapshot(options);
  await options.check?.();
  const seconds = (end.at - start.at) / 1000;
  const steps = end.committed - start.committed;
  const pct = (cpuSeconds: number) => round((cpuSeconds / seconds) * 100, 1);
  const cpuPct: Record<string, number | null> = {};
  for (const [role, pids] of Object.entries(end.cpu)) cpuPct[role] = cpuDelta(start.cpu[role], pids, pct);
  return {
    steps,
    seconds: round(seconds, 3),
    stepsPerSec: Math.round(steps / seconds),
    perSecond: {
      min: Math.round(Math.min(...rates, steps / seconds)),
      max: Math.round(Math.max(...rates, steps / seconds)),
    },
    cpuPct,
    machine:
      start.machine && end.machine
        ? {
            busyPct: pct(end.machine.busy - start.machine.busy),
            iowaitPct: pct(end.machine.iowait - start.machine.iowait),
            cores: CORES,
          }
        : null,
    diskFlushesPerSec:
      start.flushes !== null && end.flushes !== null ? Math.round((end.flushes - start.flushes) / seconds) : null,
    roundTripsPerStep:
      start.roundTrips !== null && end.roundTrips !== null && steps > 0
        ? round((end.roundTrips - start.roundTrips) / steps, 3)
        : null,
  };
}

async function snapshot(options: WindowOptions): Promise<Snapshot> {
  const roles = await options.processes();
  const roundTrips = (await options.roundTrips?.()) ?? null;
  const before = performance.now();
  const committed = await options.committed();
  // The count is taken somewhere between these two instants; its middle is the best guess of when.
  const at = (before + performance.now()) / 2;
  const cpu: Record<string, Map<number, number>> = {};
  for (const [role, pids] of Object.entries(roles)) {
    cpu[role] = new Map();
    for (const pid of pids) {
      const seconds = processCpuSeconds(pid);
      if (seconds !== null) cpu[role].set(pid, seconds);
    }
  }
  return {
    at,
    committed,
    cpu,
    machine: machineCpu(),
    flushes: options.disk === undefined ? null : diskFlushes(options.disk),
    roundTrips,
  };
}

/**
 * CPU spent by a role's processes between the two snapshots. A process first seen at the end (a pooled
 * connection opened during the window) counts from zero; one gone by the end is not counted, and a role none of
 * whose processes could be read (a PostgreSQL on another machine) has no figure.
 */
function cpuDelta(
  start: Map<number, number> | undefined,
  end: Map<number, number>,
  pct: (cpuSeconds: number) => number,
): number | null {
  if (end.size === 0) return null;
  let spent = 0;
  for (const [pid, seconds] of end) spent += seconds - (start?.get(pid) ?? 0);
  return pct(spent);
}

function round(value: number, digits: number): number {
  const f = 10 ** digits;
  return Math.round(value * f) / f;
}
