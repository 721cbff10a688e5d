/**
 * Waits for something another process does (a worker's commit, a server's answer): polls `probe` until it
 * gives a value, which is returned. The bound is generous because it only guards a hang; a test asserts on
 * what it waited for, never on how long it took. The error names what never came.
 *
 * With `progress` (a count that grows while the awaited thing is on its way, such as steps committed), the
 * bound is on a stall instead: `timeoutMs` without the count moving. A busy machine then makes the wait
 * longer, not the test red; a hang still fails, saying how far it got.
 *
 * With `gone` (a process the awaited thing depends on: what to say once it has exited, such as its output), the
 * wait fails at once when the process is gone, instead of waiting out the bound for what can no longer come.
 */
import { setTimeout as sleep } from 'node:timers/promises';

export interface UntilOptions {
  timeoutMs?: number;
  intervalMs?: number;
  progress?: () => number | Promise<number>;
  gone?: () => string | null;
}

export async function until<T>(
  what: string,
  probe: () => T | undefined | null | false | Promise<T | undefined | null | false>,
  { timeoutMs = 240_000, intervalMs = 50, progress, gone }: UntilOptions = {},
): Promise<T> {
  let deadline = Date.now() + timeoutMs;
  let seen = progress ? await progress() : 0;
  for (;;) {
    const value = await probe();
    if (value) return value;
    const said = gone?.();
    if (said != null) throw new Error(`the process exited before ${what}:\n${said}`);
    if (progress) {
      const now = await progress();
      if (now !== seen) {
        seen = now;
        deadline = Date.now() + timeoutMs;
      }
    }
    if (Date.now() > deadline) {
      const stalled = progress ? ` (no progress past ${seen})` : '';
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${stalled}`);
    }
    await sleep(intervalMs);
  }
}
