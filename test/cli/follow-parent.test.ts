/**
 * `waybill worker` started by a parent that waits for it, as npx's npm does: SIGKILL the parent (what
 * `kill -9 $!` after `npx waybill worker &` does) and the worker, which said its real pid at start, drains and
 * exits by itself. With WAYBILL_FOLLOW_PARENT=off it stays, re-parented, as nohup would want.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it, onTestFinished } from 'vitest';
import { pidAlive } from '../../lib/machine';
import { tempDir } from '../support/tmp';
import { BIN, ROOT } from './support';

/** Spawns `node BIN worker` and waits for it, passing its output through: npm exec's part, and nothing else. */
const NPX_LIKE =
  "const c = require('child_process').spawn(process.argv[1], process.argv.slice(2), { stdio: 'inherit' }); c.on('exit', (code) => process.exit(code ?? 1));";

function parentOfWorker(env: Record<string, string>) {
  const db = tempDir('waybill-follow-').file('w.db');
  const parent = spawn(process.execPath, ['-e', NPX_LIKE, process.execPath, BIN, 'worker', '--id', 'w-follow'], {
    cwd: ROOT,
    stdio: ['ignore', 'ignore', 'pipe'],
    env: { ...process.env, DATABASE_URL: `file:${db}`, WAYBILL_SQLITE_SYNC: 'normal', ...env },
  });
  const lines: string[] = [];
  let partial = '';
  parent.stderr!.setEncoding('utf8').on('data', (chunk: string) => {
    partial += chunk;
    const parts = partial.split('\n');
    partial = parts.pop()!;
    lines.push(...parts);
  });
  let workerPid: number | undefined;
  onTestFinished(async () => {
    if (parent.exitCode === null && parent.signalCode === null) {
      parent.kill('SIGKILL');
      await once(parent, 'exit');
    }
    if (workerPid !== undefined && pidAlive(workerPid)) process.kill(workerPid, 'SIGKILL');
  });
  /** The pid the worker printed at start. */
  const started = async (): Promise<number> => {
    const deadline = Date.now() + 60_000;
    for (;;) {
      for (const line of lines) {
        const entry = line.startsWith('{') ? (JSON.parse(line) as { msg: string; pid?: number }) : null;
        if (entry?.msg === `worker pid ${entry?.pid}`) return (workerPid = entry.pid!);
      }
      if (Date.now() > deadline) throw new Error(`no "worker pid" line in: ${lines.join('\n')}`);
      await sleep(20);
    }
  };
  return { parent, lines, started };
}

async function goneWithin(pid: number, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (!pidAlive(pid)) return true;
    await sleep(20);
  }
  return !pidAlive(pid);
}

describe('a worker follows its parent', () => {
  it('exits by itself when the process that started it is SIGKILLed', async () => {
    const { parent, lines, started } = parentOfWorker({});
    const pid = await started();
    expect(pid).not.toBe(parent.pid);
    parent.kill('SIGKILL');
    await once(parent, 'exit');
    expect(await goneWithin(pid, 30_000)).toBe(true);
    expect(lines).toContain(`waybill worker: its parent (pid ${parent.pid}) is gone; stopping as on SIGTERM`);
  }, 90_000);

  it('stays with WAYBILL_FOLLOW_PARENT=off', async () => {
    const { parent, started } = parentOfWorker({ WAYBILL_FOLLOW_PARENT: 'off' });
    const pid = await started();
    parent.kill('SIGKILL');
    await once(parent, 'exit');
    // Four of its half-second looks at its parent: a worker that follows is gone by then (the test above).
    expect(await goneWithin(pid, 2000)).toBe(false);
    process.kill(pid, 'SIGTERM');
    expect(await goneWithin(pid, 30_000)).toBe(true);
  }, 90_000);
});
