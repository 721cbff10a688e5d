/**
 * A command workflow's output through the store, with real processes on every backend: `waybill worker`
 * spawns the program (a node script) and writes what it prints into run_logs; this test process — another
 * process than the worker — reads it with `waybill logs` (a third process) and with its own store connection.
 * The bound holds at the store (K + 500 printed, exactly the newest K kept), and a worker SIGKILLed mid-output
 * leaves a gapless prefix of what its program printed, which the next worker's lines continue.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { chmodSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { pathToFileURL } from 'node:url';
import { describe, expect, it, onTestFinished } from 'vitest';
import type { RunLogRow } from '../../lib/store/contract';
import { BIN, ROOT, runCli } from '../cli/support';
import { makeTarget, type Target, targetKinds } from '../support/targets';
import { tempDir } from '../support/tmp';
import { until } from '../support/until';

const kinds = await targetKinds('run log process tests');
/** A line as `waybill logs --json` (and the API) shows it: the row without its run id, which the page names once. */
type Line = Omit<RunLogRow, 'runId'>;
const K = 300;

/**
 * The module a user would write: `chatty` prints on both streams, `flood` prints `lines` lines, `held` prints
 * 50 lines and `ready`, then a tick every 20 ms until its worker dies — and once a marker file exists, only
 * `resumed`. A program dies with its worker (its watchdog kills it).
 */
function workflowModule(dir: string): string {
  const engine = pathToFileURL(join(ROOT, 'lib/engine/command-workflow.ts')).href;
  const zod = pathToFileURL(join(ROOT, 'node_modules/zod/index.js')).href;
  const node = JSON.stringify(process.execPath);
  // `held` writes its marker here as the programs' user (nobody under a root worker).
  chmodSync(dir, 0o777);
  const marker = JSON.stringify(join(dir, 'held.marker'));
  const file = join(dir, 'programs.mjs');
  writeFileSync(
    file,
    `import { defineCommandWorkflow } from ${JSON.stringify(engine)};
import { z } from ${JSON.stringify(zod)};
export const chatty = defineCommandWorkflow({ name: 'chatty', input: z.object({}), command: [${node}, '-e',
  "for (let i = 0; i < 5; i++) { console.log('out ' + i); console.error('err ' + i); }"] });
export const flood = defineCommandWorkflow({ name: 'flood', input: z.object({ lines: z.number() }), command: [${node}, '-e',
  "const n = JSON.parse(process.env.WAYBILL_INPUT).lines; let s = ''; for (let i = 0; i < n; i++) s += 'line ' + i + '\\\\n'; process.stdout.write(s);"] });
export const held = defineCommandWorkflow({ name: 'held', input: z.object({}), env: { MARKER: ${marker} }, command: [${node}, '-e',
  "const fs = require('fs'); if (fs.existsSync(process.env.MARKER)) { console.log('resumed'); process.exit(0); } fs.writeFileSync(process.env.MARKER, ''); for (let i = 0; i < 50; i++) console.log('line ' + i); console.log('ready'); let t = 0; setInterval(() => console.log('tick ' + t++), 20);"] });
`,
  );
  return file;
}

function startWorker(target: Target, id: string, module: string): ChildProcess {
  const child = spawn(
    process.execPath,
    // The programs never call the API: --url only has to be an address (nothing listens on port 9).
    [BIN, 'worker', '--id', id, '--workflows', module, '--url', 'http://127.0.0.1:9'],
    {
      cwd: ROOT,
      stdio: ['ignore', 'ignore', 'pipe'],
      env: {
        ...process.env,
        DATABASE_URL: target.url,
        WAYBILL_SQLITE_SYNC: 'normal',
        WAYBILL_HEARTBEAT_MS: '100',
        WAYBILL_RUN_LOG_LINES: String(K),
      },
    },
  );
  child.stderr!.resume();
  onTestFinished(async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGKILL');
      await once(child, 'exit');
    }
  });
  return child;
}

/** Every kept line of the run, through `waybill logs --json` in a process of its own. */
async function cliLines(target: Target, runId: string): Promise<Line[]> {
  const result = await runCli(['logs', runId, '--json', '--after', '0', '--limit', '100000'], {
    env: { DATABASE_URL: target.url },
  });
  expect(result.stderr).toBe('');
  expect(result.code).toBe(0);
  const page = JSON.parse(result.stdout) as { runId: string; lines: Line[]; more: boolean };
  expect(page.runId).toBe(runId);
  expect(page.more).toBe(false);
  return page.lines;
}

const statusOf = async (target: Target, runId: string) => (await (await target.store()).getRun(runId))?.status;
const queue = async (target: Target, id: string, workflow: string, input: unknown) =>
  (await target.store()).createRun({ id, workflow, inputJson: JSON.stringify(input), totalSteps: null });

describe.each(kinds)('run logs through the store on %s', (kind) => {
  it("a program's stdout and stderr lines are read from another process, and a run keeps exactly its newest K", async () => {
    const target = await makeTarget(kind);
    const module = workflowModule(tempDir('waybill-logs-').path);
    const worker = startWorker(target, 'w-logs', module);
    await queue(target, 'chatty-1', 'chatty', {});
    await queue(target, 'flood-1', 'flood', { lines: K + 500 });
    await until(
      'both runs completed',
      async () =>
        (await statusOf(target, 'chatty-1')) === 'completed' && (await statusOf(target, 'flood-1')) === 'completed',
    );

    const chatty = await cliLines(target, 'chatty-1');
    // Numbered from 1 without gaps; each stream's lines in the order printed (the two pipes interleave freely).
    expect(chatty.map((l) => l.seq)).toEqual(Array.from({ length: 12 }, (_, i) => i + 1));
    expect(chatty.filter((l) => l.stream === 'stdout').map((l) => l.line)).toEqual([
      'out 0',
      'out 1',
      'out 2',
      'out 3',
      'out 4',
    ]);
    expect(chatty.filter((l) => l.stream === 'stderr').map((l) => l.line)).toEqual([
      'err 0',
      'err 1',
      'err 2',
      'err 3',
      'err 4',
    ]);
    expect(chatty[0]).toMatchObject({ stream: 'worker', workerId: 'w-logs', attempt: 1 });
    expect(chatty[0]!.line).toMatch(/^started .*node.* -e .* \(group \d+(, user \S+)?, attempt 1\)$/);
    expect(chatty.at(-1)).toMatchObject({ stream: 'worker', line: 'program exited with 0' });
    // The test's own connection reads the same rows.
    const rows = await (await target.store()).readRunLogs('chatty-1', { afterSeq: 0, limit: 100 });
    expect(rows.map(({ runId, ...line }) => line)).toEqual(chatty);
    expect(new Set(rows.map((r) => r.runId))).toEqual(new Set(['chatty-1']));

    // started + K + 500 lines + exited: the newest K are kept, the rest were deleted as they were written.
    const flood = await cliLines(target, 'flood-1');
    expect(flood.length).toBe(K);
    // Their seqs are consecutive; whether the oldest lines were deleted at the store or let go by the worker
    // before (a burst of more than 2K lines: a note then says so, and it is older than the newest K), the run
    // holds the newest K of what was printed.
    expect(flood.map((l) => l.seq)).toEqual(Array.from({ length: K }, (_, i) => flood[0]!.seq + i));
    expect(flood.slice(0, -1).map((l) => l.line)).toEqual(Array.from({ length: K - 1 }, (_, i) => `line ${501 + i}`));
    expect(flood.at(-1)).toMatchObject({ stream: 'worker', line: 'program exited with 0' });
    worker.kill('SIGTERM');
    expect((await once(worker, 'exit'))[0]).toBe(0);
  }, 180_000);

  it("a SIGKILLed worker's stored lines stay, a gapless prefix of what its program printed; the next worker's continue them", async () => {
    const target = await makeTarget(kind);
    const module = workflowModule(tempDir('waybill-logs-').path);
    const w1 = startWorker(target, 'w-held-1', module);
    await queue(target, 'held-1', 'held', {});
    const store = await target.store();
    // `ready` is stored: the 50 lines before it were too. The program goes on ticking until the kill.
    await until('ticks stored', async () =>
      (await store.readRunLogs('held-1', { limit: 1 }))[0]?.line.startsWith('tick'),
    );
    w1.kill('SIGKILL');
    await once(w1, 'exit');
    const left = await cliLines(target, 'held-1');
    expect(left.map((l) => l.line).slice(0, 52)).toEqual([
      expect.stringMatching(/^started /),
      ...Array.from({ length: 50 }, (_, i) => `line ${i}`),
      'ready',
    ]);
    const ticks = left.slice(52).map((l) => l.line);
    expect(ticks.length).toBeGreaterThan(0);
    expect(ticks).toEqual(Array.from({ length: ticks.length }, (_, i) => `tick ${i}`));
    expect(left.map((l) => l.seq)).toEqual(Array.from({ length: left.length }, (_, i) => i + 1));
    expect(new Set(left.map((l) => l.workerId))).toEqual(new Set(['w-held-1']));
    // Nothing more is written for the dead worker: a second read, once its program has seen it die, is the same.
    await sleep(300);
    expect(await cliLines(target, 'held-1')).toEqual(left);

    const w2 = startWorker(target, 'w-held-2', module);
    await until('held-1 completed by w-held-2', async () => (await statusOf(target, 'held-1')) === 'completed');
    const all = await cliLines(target, 'held-1');
    expect(all.slice(0, left.length)).toEqual(left);
    const after = all.slice(left.length);
    expect(after.map((l) => l.line)).toEqual([expect.stringMatching(/^started /), 'resumed', 'program exited with 0']);
    expect(after.map((l) => l.seq)).toEqual([left.length + 1, left.length + 2, left.length + 3]);
    expect(new Set(after.map((l) => l.workerId))).toEqual(new Set(['w-held-2']));
    // The second take of the run: its attempt (the fence) is one more than the first's.
    expect(after[0]!.attempt).toBe(left[0]!.attempt! + 1);
    w2.kill('SIGTERM');
    expect((await once(w2, 'exit'))[0]).toBe(0);
  }, 180_000);
});
