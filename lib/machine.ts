/**
 * Which machine a pid belongs to, for judging a peer dead by its pid. A hostname is not enough: containers
 * started with `--network host` share the host's name, yet each has a pid namespace of its own, where a live
 * peer's pid is simply not visible. Two processes may compare pids only when they run on one kernel (the boot
 * id, fresh at every boot) and in one pid namespace (its inode). Elsewhere than Linux there are no pid
 * namespaces: the host's name and its boot time stand for the machine.
 *
 * Shared by the worker's dead-peer check (workers.machine) and the checkpoint core's dead-holder check (the
 * machine is in the claim's token, lib/checkpoint/holder.ts), so both judge "same machine" alike.
 */
import { readFileSync, statSync } from 'node:fs';
import { hostname, platform, uptime } from 'node:os';

let cached: string | null | undefined;

/** This process's machine, or null when it cannot be told (such a worker is never judged by its pid). */
export function machineId(): string | null {
  cached ??= linuxMachine() ?? otherMachine();
  return cached;
}

function linuxMachine(): string | null {
  if (platform() !== 'linux') return null;
  try {
    const boot = readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
    const ns = statSync('/proc/self/ns/pid');
    return boot ? `linux:${boot}:pidns:${ns.dev}:${ns.ino}` : null;
  } catch {
    // /proc hidden (a hardened sandbox): no proof of identity, so no judging by pid.
    return null;
  }
}

function otherMachine(): string | null {
  if (platform() === 'linux') return null;
  // Rounded to a minute: two processes computing it a moment apart must agree. A mismatch only costs speed
  // (the peer's lease decides instead), never a live worker declared dead.
  const bootedAt = Math.round((Date.now() / 1000 - uptime()) / 60);
  return `${platform()}:${hostname()}:boot:${bootedAt}`;
}

/**
 * Whether a pid on this machine still runs. A zombie (killed, not yet reaped by its parent) answers signal 0
 * like a live process, but runs nothing: it is dead for our purposes, and its parent may reap it late.
 */
export function pidAlive(pid: number): boolean {
  // 0 and negative pids name process groups, not a process: never proof of anything.
  if (!Number.isSafeInteger(pid) || pid <= 0) return true;
  try {
    process.kill(pid, 0);
  } catch (error) {
    return (error as NodeJS.ErrnoException).code !== 'ESRCH';
  }
  if (platform() !== 'linux') return true;
  try {
    // The state follows the command name, which is in parentheses and may itself contain them.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
    return state !== 'Z' && state !== 'X';
  } catch (error) {
    // Gone between the two looks; or /proc unreadable, and then signal 0 has the last word.
    return (error as NodeJS.ErrnoException).code !== 'ENOENT';
  }
}
