/**
 * One throughput measurement: let the load warm up, then count what was committed over a window of steady
 * state, and read alongside what each process spent (bench/proc.ts). The rate is the committed count's
 * difference across the window over the window's length, so the warm-up (starting processes, taking runs,
 * filling pools, the JIT) is never in it, and neither is the drain after it. Nothing here knows how the
 * product writes (one transaction a step, or batches): it only counts what became durable.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { CORES, diskFlushes, type MachineCpu, machineCpu, type ProcessCpu, processCpu } from './proc';

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
  /** Counters started right before the window's first snapshot and read right after its last (a WAL meter). */
  counted?: { begin(): void; end(): Record<string, number> };
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
  /**
   * CPU each role spent per committed step, in µs: what a step costs whatever the machine's load (the rate
   * is what is left of the cores after the neighbours; this is far steadier than it).
   */
  cpuUsPerStep: Record<string, number | null>;
  /** The share of each role's CPU spent in the kernel (system calls: fsync, sockets, pipes) rather than its code. */
  kernelShare: Record<string, number | null>;
  /**
   * The whole machine over the window, percent of one core: busy, idle waiting on I/O, and the busy time
   * that none of the roles spent (other processes', and the database's own background processes').
   */
  machine: { busyPct: number; iowaitPct: number; othersPct: number; cores: number } | null;
  /** Flushes the database's disk completed per second, every process's included. */
  diskFlushesPerSec: number | null;
  roundTripsPerStep: number | null;
  /** What `counted` counted over the window, per committed step (or over `countedOver`'s, when set). */
  countedPerStep: Record<string, number>;
  /** The counting window `countedPerStep` was read over, when it is not this one (bench/throughput-sqlite.ts). */
  countedOver?: { steps: number; seconds: number };
}

interface Snapshot {
  at: number;
  committed: number;
  cpu: Record<string, Map<number, ProcessCpu>>;
  machine: MachineCpu | null;
  flushes: number | null;
  roundTrips: number | null;
}

const SAMPLE_MS = 1000;

export async function measureWindow(options: WindowOptions): Promise<WindowFigure> {
  await sleep(options.warmupMs);
  await options.check?.();
  options.counted?.begin();
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
  const counted = options.counted?.end() ?? {};
  await options.check?.();
  const seconds = (end.at - start.at) / 1000;
  const steps = end.committed - start.committed;
  const pct = (cpuSeconds: number) => round((cpuSeconds / seconds) * 100, 1);
  const cpuPct: Record<string, number | null> = {};
  const cpuUsPerStep: Record<string, number | null> = {};
  const kernelShare: Record<string, number | null> = {};
  let ours = 0;
  for (const [role, pids] of Object.entries(end.cpu)) {
    const used = cpuDelta(start.cpu[role], pids);
    const spent = used === null ? null : used.user + used.system;
    cpuPct[role] = spent === null ? null : pct(spent);
    cpuUsPerStep[role] = spent === null || steps === 0 ? null : round((spent / steps) * 1e6, 1);
    kernelShare[role] = spent === null || spent === 0 ? null : round(used!.system / spent, 3);
    ours += spent ?? 0;
  }
  return {
    steps,
    seconds: round(seconds, 3),
    stepsPerSec: Math.round(steps / seconds),
    perSecond: {
      min: Math.round(Math.min(...rates, steps / seconds)),
      max: Math.round(Math.max(...rates, steps / seconds)),
    },
    cpuPct,
    cpuUsPerStep,
    kernelShare,
    machine:
      start.machine && end.machine
        ? {
            busyPct: pct(end.machine.busy - start.machine.busy),
            iowaitPct: pct(end.machine.iowait - start.machine.iowait),
            othersPct: pct(Math.max(0, end.machine.busy - start.machine.busy - ours)),
            cores: CORES,
          }
        : null,
    diskFlushesPerSec:
      start.flushes !== null && end.flushes !== null ? Math.round((end.flushes - start.flushes) / seconds) : null,
    roundTripsPerStep:
      start.roundTrips !== null && end.roundTrips !== null && steps > 0
        ? round((end.roundTrips - start.roundTrips) / steps, 3)
        : null,
    countedPerStep: Object.fromEntries(
      Object.entries(counted).map(([name, n]) => [name, steps === 0 ? 0 : round(n / steps, 3)]),
    ),
  };
}

async function snapshot(options: WindowOptions): Promise<Snapshot> {
  const roles = await options.processes();
  const roundTrips = (await options.roundTrips?.()) ?? null;
  const before = performance.now();
  const committed = await options.committed();
  // The count is taken somewhere between these two instants; its middle is the best guess of when.
  const at = (before + performance.now()) / 2;
  const cpu: Record<string, Map<number, ProcessCpu>> = {};
  for (const [role, pids] of Object.entries(roles)) {
    cpu[role] = new Map();
    for (const pid of pids) {
      const used = processCpu(pid);
      if (used !== null) cpu[role].set(pid, used);
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
 * CPU seconds spent by a role's processes between the two snapshots. A process first seen at the end (a pooled
 * connection opened during the window) counts from zero; one gone by the end is not counted, and a role none of
 * whose processes could be read (a PostgreSQL on another machine) has no figure.
 */
function cpuDelta(start: Map<number, ProcessCpu> | undefined, end: Map<number, ProcessCpu>): ProcessCpu | null {
  if (end.size === 0) return null;
  const spent = { user: 0, system: 0 };
  for (const [pid, used] of end) {
    spent.user += used.user - (start?.get(pid)?.user ?? 0);
    spent.system += used.system - (start?.get(pid)?.system ?? 0);
  }
  return spent;
}

function round(value: number, digits: number): number {
  const f = 10 ** digits;
  return Math.round(value * f) / f;
}
