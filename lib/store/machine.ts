/**
 * Which machine and pid namespace this process's pid means something in. A pid is evidence of death only
 * to a process that can see it: two containers can share a hostname yet not each other's pids, so the host
 * name is not enough. Linux: the kernel's boot id (a new one each boot) and the pid namespace's inode.
 * Elsewhere (macOS, no pid namespaces): the host name and boot time, the best that is there.
 *
 * Shared by the worker's dead-peer check (workers.machine) and the checkpoint core's dead-holder check (the
 * machine is in the claim's token), so both judge "same machine" alike.
 */
import { readFileSync, statSync } from 'node:fs';
import { hostname, uptime } from 'node:os';

let cached: string | undefined;

/** A stable string naming this kernel boot and pid namespace; equal for every process that sees our pids. */
export function machineId(): string {
  cached ??= linuxMachine() ?? `host:${hostname()}:${Math.round(Date.now() / 1000 - uptime())}`;
  return cached;
}

function linuxMachine(): string | null {
  try {
    const boot = readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
    const pidNamespace = statSync('/proc/self/ns/pid').ino;
    return `linux:${boot}:${pidNamespace}`;
  } catch {
    return null;
  }
}

/** Whether a pid is alive in this pid namespace: only ESRCH is proof that it is not (EPERM: alive, not ours). */
export function pidAlive(pid: number): boolean {
  // 0 and negative pids name process groups, not a process: never proof of anything.
  if (!Number.isSafeInteger(pid) || pid <= 0) return true;
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code !== 'ESRCH';
  }
}
