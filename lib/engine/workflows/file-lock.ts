/**
 * A lock shared by every process on the machine, for short synchronous critical sections over a file.
 *
 * The lock is a file holding its owner's pid. It is created exclusively (O_EXCL semantics) by linking a
 * private file, already holding the pid, to the lock path: link() fails with EEXIST like open('wx') does,
 * but the lock is never visible empty. With open('wx') then write(pid), a process killed between the two
 * would leave an empty lock nobody could prove stale.
 *
 * A lock is broken only with proof that its owner is gone: its pid answers ESRCH. Never by age, because a
 * live owner that was merely stopped would then find a second owner inside its critical section. Breakers
 * take a second lock first, so two processes that both saw the same dead owner cannot have the second
 * remove the lock the first just created. (If a breaker itself dies inside its few syscalls, its lock is
 * removed without that protection: a race that needs two unlucky kills in the same microseconds.)
 *
 * Pids are compared on this host only: do not share a lock file across machines or pid namespaces.
 */
import { randomBytes } from 'node:crypto';
import { linkSync, readdirSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { LockTimeoutError } from '../../errors';
import { pidAlive } from '../../machine';

export interface FileLockOptions {
  signal?: AbortSignal;
  /** Give up (a transient error, retried by the run context) when a live owner holds it this long. */
  timeoutMs?: number;
}

/**
 * Runs `section` holding the lock. `section` must be synchronous: nothing else in this process may run
 * while the lock is held, so a SIGKILL is the only way to leave it held, and that is what breaking covers.
 */
export async function withFileLock<T>(path: string, section: () => T, options: FileLockOptions = {}): Promise<T> {
  const started = Date.now();
  const timeoutMs = options.timeoutMs ?? 30_000;
  let delay = 1;
  if (!swept.has(path)) {
    swept.add(path);
    sweepOrphans(path);
  }
  for (;;) {
    options.signal?.throwIfAborted();
    // Look before trying: a waiter that polled with tryCreate would leave a private file behind each time
    // it was killed mid-poll.
    const owner = readOwner(path);
    if (owner === null && tryCreate(path)) {
      try {
        return section();
      } finally {
        unlinkQuietly(path);
      }
    }
    if (owner !== null && breakIfStale(path, owner)) continue;
    if (Date.now() - started > timeoutMs) throw new LockTimeoutError(path, readOwner(path), Date.now() - started);
    // Full jitter keeps contending processes from waking together; a holder needs about one fsync.
    await sleep(delay * (0.5 + Math.random() / 2), undefined, options.signal ? { signal: options.signal } : undefined);
    delay = Math.min(delay * 2, 10);
  }
}

/** One attempt, never waits: true when the lock is now ours. */
export function tryCreate(path: string): boolean {
  const mine = `${path}.${process.pid}.${randomBytes(4).toString('hex')}`;
  writeFileSync(mine, `${process.pid}\n`, { flag: 'wx' });
  try {
    linkSync(mine, path);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw error;
  } finally {
    unlinkQuietly(mine);
  }
}

/** The pid in a lock file; null when there is no lock, 0 when its content is not a pid (never proved stale). */
export function readOwner(path: string): number | null {
  try {
    const pid = Number.parseInt(readFileSync(path, 'utf8'), 10);
    return Number.isInteger(pid) && pid > 0 ? pid : 0;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw error;
  }
}

/** True when the lock was broken here (or is gone): try again at once. */
function breakIfStale(path: string, owner: number): boolean {
  if (owner === 0 || pidAlive(owner)) return false;
  const breaker = `${path}.break`;
  if (readOwner(breaker) !== null || !tryCreate(breaker)) {
    const other = readOwner(breaker);
    if (other !== null && other !== 0 && !pidAlive(other)) unlinkQuietly(breaker);
    return false;
  }
  try {
    // Only breakers remove a dead owner's lock, and we are the only breaker: if the file still names the
    // dead pid, it is the stale lock and not a fresh one.
    const now = readOwner(path);
    if (now === owner && !pidAlive(owner)) unlinkQuietly(path);
  } finally {
    unlinkQuietly(breaker);
  }
  sweepOrphans(path);
  sweepOrphans(breaker);
  return true;
}

const swept = new Set<string>();

/** Removes the private files of processes killed between creating one and linking or removing it. */
function sweepOrphans(path: string): void {
  const prefix = `${basename(path)}.`;
  let names: string[];
  try {
    names = readdirSync(dirname(path));
  } catch {
    return;
  }
  for (const name of names) {
    const match = name.startsWith(prefix) ? /^(\d+)\.[0-9a-f]{8}$/.exec(name.slice(prefix.length)) : null;
    if (match && !pidAlive(Number(match[1]))) unlinkQuietly(join(dirname(path), name));
  }
}

function unlinkQuietly(path: string): void {
  try {
    unlinkSync(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
}
