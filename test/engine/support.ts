/**
 * Real `waybill worker` processes for the engine tests, and what they leave behind: the notify outbox read
 * as executions per key (a `duplicate` line is an execution the receiver refused, so it counts).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { onTestFinished } from 'vitest';
import { BIN, ROOT } from '../cli/support';
import type { Target } from '../support/targets';
import { until } from '../support/until';
import { workerEnvFor } from '../workflows/user-module';

export { until };

export interface WorkerProcess {
  child: ChildProcess;
  /** The worker's JSON log lines so far. */
  logs: { msg: string; [field: string]: unknown }[];
}

/** A `waybill worker` process; SIGKILLed (and waited for) when the test ends if still alive. */
export function startWorker(target: Target, args: string[], env: Record<string, string> = {}): WorkerProcess {
  const child = spawn(process.execPath, [BIN, 'worker', ...args], {
    cwd: ROOT,
    stdio: ['ignore', 'ignore', 'pipe'],
    env: { ...process.env, DATABASE_URL: target.url, WAYBILL_SQLITE_SYNC: 'normal', ...workerEnvFor(args), ...env },
  });
  const logs: WorkerProcess['logs'] = [];
  let partial = '';
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => {
    partial += chunk;
    let nl: number;
    while ((nl = partial.indexOf('\n')) >= 0) {
      const line = partial.slice(0, nl);
      partial = partial.slice(nl + 1);
      try {
        logs.push(JSON.parse(line) as WorkerProcess['logs'][number]);
      } catch {
        logs.push({ msg: line });
      }
    }
  });
  onTestFinished(async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGCONT');
      child.kill('SIGKILL');
      await once(child, 'exit');
    }
  });
  return { child, logs };
}

/** How many times each key's side effect ran, delivered or refused as a duplicate. */
export function executionsByKey(outbox: string): Map<string, number> {
  const counts = new Map<string, number>();
  let text = '';
  try {
    text = readFileSync(outbox, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  for (const line of text.split('\n').filter(Boolean)) {
    const { key } = JSON.parse(line) as { key: string };
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  return counts;
}
