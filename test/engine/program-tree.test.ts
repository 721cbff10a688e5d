/**
 * A command workflow's program with a child of its own that ignores SIGTERM, run by real `waybill worker`
 * processes. A cancel stops the whole tree; a worker SIGKILLed takes the tree with it; and the next worker's
 * copy of the program starts only once every process of the first is gone. Each copy appends its pid and its
 * grandchild's to a file as it starts, with how many earlier copies (or their grandchildren) it found alive.
 */
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it, onTestFinished } from 'vitest';
import { pidAlive } from '../../lib/machine';
import { ROOT } from '../cli/support';
import { makeTarget } from '../support/targets';
import { tempDir } from '../support/tmp';
import { startWorker, until } from './support';

/**
 * The first copy starts the grandchild and waits to be stopped; a later copy checks it is alone, then exits 0.
 * `ready` is written once the grandchild's SIGTERM handler is in place.
 */
const PROGRAM = `
const fs = require('fs');
const { spawn } = require('child_process');
const alive = (pid) => { try { return !/^\\d+ \\(.*\\) Z/s.test(fs.readFileSync('/proc/' + pid + '/stat', 'utf8')); } catch { return false; } };
const file = process.env.STARTS;
const before = fs.existsSync(file) ? fs.readFileSync(file, 'utf8').split('\\n').filter(Boolean).map((l) => JSON.parse(l)) : [];
const overlap = before.filter((e) => (e.pid && alive(e.pid)) || (e.grandchild && alive(e.grandchild))).length;
if (before.some((e) => e.pid)) {
  fs.appendFileSync(file, JSON.stringify({ pid: process.pid, grandchild: null, overlap }) + '\\n');
  process.exit(0);
}
const grandchild = spawn(process.execPath, ['-e',
  "process.on('SIGTERM', () => {}); require('fs').appendFileSync(process.env.STARTS, JSON.stringify({ ready: process.pid }) + '\\\\n'); setInterval(() => {}, 1000);"],
  { stdio: 'ignore' });
fs.appendFileSync(file, JSON.stringify({ pid: process.pid, grandchild: grandchild.pid, overlap }) + '\\n');
setInterval(() => {}, 1000);
`;

interface Start {
  pid: number;
  grandchild: number | null;
  overlap: number;
}

function setUp() {
  // Written by the program's user (nobody under a root worker): a directory anyone may write to.
  const shared = mkdtempSync(join(tmpdir(), 'waybill-tree-'));
  onTestFinished(() => rmSync(shared, { recursive: true, force: true }));
  chmodSync(shared, 0o777);
  const starts = join(shared, 'starts.jsonl');
  const module = tempDir('waybill-tree-module-').file('programs.mjs');
  const engine = pathToFileURL(join(ROOT, 'lib/engine/command-workflow.ts')).href;
  const zod = pathToFileURL(join(ROOT, 'node_modules/zod/index.js')).href;
  writeFileSync(
    module,
    `import { defineCommandWorkflow } from ${JSON.stringify(engine)};
import { z } from ${JSON.stringify(zod)};
export const tree = defineCommandWorkflow({ name: 'tree', input: z.object({}), env: { STARTS: ${JSON.stringify(starts)} },
  graceMs: 60000, command: [${JSON.stringify(process.execPath)}, '-e', ${JSON.stringify(PROGRAM)}] });
`,
  );
  const lines = () =>
    existsSync(starts)
      ? readFileSync(starts, 'utf8')
          .split('\n')
          .filter(Boolean)
          .map((l) => JSON.parse(l) as Start | { ready: number })
      : [];
  const copies = () => lines().filter((l): l is Start => 'pid' in l);
  const ready = () => lines().filter((l) => 'ready' in l).length;
  // A failing run of this test leaves its survivors to nobody else.
  onTestFinished(() => {
    for (const pid of copies().flatMap((c) => [c.pid, c.grandchild ?? 0]))
      if (pid > 0 && pidAlive(pid)) process.kill(pid, 'SIGKILL');
  });
  return { module, copies, ready };
}

const worker = (url: string, id: string, module: string) =>
  startWorker(
    { url } as Parameters<typeof startWorker>[0],
    ['--id', id, '--workflows', module, '--url', 'http://127.0.0.1:9'],
    {
      WAYBILL_HEARTBEAT_MS: '100',
      WAYBILL_RUN_LEASE_MS: '60000',
    },
  );

/** Gone within the bound, polled: a group signalled is dead in milliseconds, a survivor never is. */
const gone = (pids: number[], what: string) =>
  until(what, async () => pids.every((pid) => !pidAlive(pid)), { timeoutMs: 20_000 });

describe("a program's process tree", () => {
  it('a cancel stops the program and its grandchild that ignores SIGTERM, long before the grace period', async () => {
    const target = await makeTarget('sqlite');
    const store = await target.store();
    const { module, copies, ready } = setUp();
    worker(target.url, 'w-tree-c', module);
    await store.createRun({ id: 'tree-c', workflow: 'tree', inputJson: '{}', totalSteps: null });
    await until('the grandchild ready', async () => ready() === 1);
    const [first] = copies();
    await store.actOnRun('tree-c', 'cancel', 'ann');
    // graceMs is 60 s: the program dies of the SIGTERM, and its grandchild with what it left behind.
    await gone([first!.pid, first!.grandchild!], 'the program and its grandchild gone');
    await until('the run handed back', async () => (await store.getRun('tree-c'))?.owner === null);
    expect((await store.getRun('tree-c'))?.status).toBe('cancelled');
    expect(copies()).toHaveLength(1);
  }, 120_000);

  it("a worker SIGKILLed takes the tree with it, and the next worker's copy runs alone", async () => {
    const target = await makeTarget('sqlite');
    const store = await target.store();
    const { module, copies, ready } = setUp();
    const a = worker(target.url, 'w-tree-a', module);
    await store.createRun({ id: 'tree-k', workflow: 'tree', inputJson: '{}', totalSteps: null });
    await until('the grandchild ready', async () => ready() === 1);
    // The next worker is up and watching before the kill: it takes the run as soon as it finds w-tree-a's pid gone.
    const b = worker(target.url, 'w-tree-b', module);
    await until('w-tree-b serving', async () => b.logs.some((l) => l.msg === 'serving workflows'));
    const [first] = copies();
    a.child.kill('SIGKILL');
    await gone([first!.pid, first!.grandchild!], "the first copy's tree gone with its worker");
    await until('tree-k completed by w-tree-b', async () => (await store.getRun('tree-k'))?.status === 'completed');
    const all = copies();
    expect(all).toHaveLength(2);
    expect(all.map((c) => c.overlap)).toEqual([0, 0]);
    expect(all[1]!.pid).not.toBe(first!.pid);
  }, 120_000);
});
