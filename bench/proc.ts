/**
 * What the throughput bench reads of the machine while it measures: CPU time per process, the machine's busy
 * and iowait time, and the flushes the disk completed. All from /proc, so nothing is added to the processes
 * measured. Linux only; elsewhere (or for a process in another pid namespace, as a remote PostgreSQL's
 * backends) each reader answers null and the figure is left out.
 */
import { readFileSync, statSync } from 'node:fs';
import { cpus } from 'node:os';

/** Clock ticks per second of /proc's CPU times: USER_HZ, 100 on every Linux that Node runs on. */
const TICKS_PER_SEC = 100;

function read(path: string): string | null {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return null;
  }
}

/** CPU seconds a process has used (all its threads): in its own code, and in the kernel on its behalf. */
export interface ProcessCpu {
  user: number;
  system: number;
}

/** What a process has used so far, or null when it cannot be read (gone, or not on this machine). */
export function processCpu(pid: number): ProcessCpu | null {
  const stat = read(`/proc/${pid}/stat`);
  if (stat === null) return null;
  // Field 2 (comm) is in parentheses and may hold spaces: count fields from the last ')'.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // utime and stime are fields 14 and 15 of the line, 12 and 13 after comm.
  return { user: Number(fields[11]) / TICKS_PER_SEC, system: Number(fields[12]) / TICKS_PER_SEC };
}

export interface MachineCpu {
  /** CPU seconds spent running anything (user, nice, system, irq, softirq, steal), summed over cores. */
  busy: number;
  /** CPU seconds idle while some I/O was outstanding: a core waiting on a flush. */
  iowait: number;
}

export function machineCpu(): MachineCpu | null {
  const line = read('/proc/stat')?.split('\n')[0];
  if (!line?.startsWith('cpu ')) return null;
  const [user, nice, system, , iowait, irq, softirq, steal] = line.trim().split(/\s+/).slice(1).map(Number) as number[];
  return {
    busy: (user! + nice! + system! + irq! + softirq! + (steal ?? 0)) / TICKS_PER_SEC,
    iowait: iowait! / TICKS_PER_SEC,
  };
}

export const CORES = cpus().length;

/**
 * Flush requests (cache flushes, what an fsync asks of a disk with a write-back cache) the block device
 * holding `path` has completed, or null when /proc/diskstats or its flush column cannot say. The count is
 * the whole device's: every process's fsyncs, the filesystem journal's included.
 */
export function diskFlushes(path: string): number | null {
  let dev: number;
  try {
    dev = statSync(path).dev;
  } catch {
    return null;
  }
  // Linux's dev_t: major in bits 8-19 (and 32-43), minor in bits 0-7 and 20-31.
  const major = (dev >> 8) & 0xfff;
  const minor = (dev & 0xff) | ((dev >> 12) & 0xfff00);
  const rows = read('/proc/diskstats')?.split('\n') ?? [];
  const row = rows.map((r) => r.trim().split(/\s+/)).find((f) => Number(f[0]) === major && Number(f[1]) === minor);
  // Flushes completed is the 19th column (kernels since 5.5); should a partition's row lack it, its disk's has it.
  const flushes = row?.[18] ?? (row ? wholeDisk(rows, row[2]!)?.[18] : undefined);
  return flushes === undefined ? null : Number(flushes);
}

/** The row of the disk a partition (vda1, nvme0n1p2) belongs to. */
function wholeDisk(rows: string[], partition: string): string[] | undefined {
  const disk = partition.replace(/p?\d+$/, '');
  return rows.map((r) => r.trim().split(/\s+/)).find((f) => f[2] === disk);
}

/** The command name of a process (`postgres`, `node`), or null when there is no such process here. */
export function processCommand(pid: number): string | null {
  return read(`/proc/${pid}/comm`)?.trim() ?? null;
}

/**
 * CPU seconds a single-threaded process (a PostgreSQL backend) has run, to the nanosecond: the scheduler's
 * `se.sum_exec_runtime` (ms) of /proc/<pid>/sched, where the kernel keeps it; else /proc/<pid>/stat's
 * 10 ms ticks. Null when neither can be read.
 */
export function processRuntime(pid: number): number | null {
  const match = /^se\.sum_exec_runtime\s*:\s*([0-9.]+)$/m.exec(read(`/proc/${pid}/sched`) ?? '');
  if (match) return Number(match[1]) / 1000;
  const ticks = processCpu(pid);
  return ticks === null ? null : ticks.user + ticks.system;
}
