/**
 * Waits for something another process does (a worker's commit, a server's answer): polls `probe` until it
 * gives a value, which is returned. The bound is generous because it only guards a hang; a test asserts on
 * what it waited for, never on how long it took. The error names what never came.
 */
import { setTimeout as sleep } from 'node:timers/promises';

export async function until<T>(
  what: string,
  probe: () => T | undefined | null | false | Promise<T | undefined | null | false>,
  { timeoutMs = 240_000, intervalMs = 25 }: { timeoutMs?: number; intervalMs?: number } = {},
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(intervalMs);
  }
}
