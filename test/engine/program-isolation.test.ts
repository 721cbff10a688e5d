/**
 * A command workflow's program, run by a real root `waybill worker` (started by a parent process, as npx
 * starts it, both holding the operator's secrets), looks for those secrets and for the store the way an
 * attacker in the sandbox would: every /proc/<pid>/environ it can read, its ancestors' one by one, the
 * worker's cwd and open files, its own inherited descriptors, and the store's path guessed outright. It finds
 * none of them. The data directory is left open to others (0755, what mkdir makes of ./data) on purpose: the
 * store's own files must keep the program out.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it, onTestFinished } from 'vitest';
import { openStore } from '../../lib/store/index';
import { BIN, ROOT } from '../cli/support';
import { until } from './support';

/** In every secret the worker holds, and in the store's path: whatever of them the program reads shows it. */
const MARK = 'SECRETMARK';

/** What the program reports, on one stdout line. Its environment holds nothing with MARK in it. */
const PROGRAM = `
const fs = require('fs');
const mark = ['SECRET', 'MARK'].join('');
const code = (f) => { try { f(); return 'ok'; } catch (e) { return e.code; } };
const read = (path) => { try { return fs.readFileSync(path, 'latin1'); } catch (e) { return null; } };
const marked = [];
const readable = [];
for (const pid of fs.readdirSync('/proc').filter((n) => /^\\d+$/.test(n))) {
  if (Number(pid) === process.pid) continue;
  const environ = read('/proc/' + pid + '/environ');
  if (environ === null) continue;
  readable.push(Number(pid));
  if (environ.includes(mark)) marked.push(Number(pid));
}
const ancestors = [];
for (let pid = process.ppid; pid > 1; ) {
  ancestors.push({ pid, environ: code(() => fs.readFileSync('/proc/' + pid + '/environ')),
    cwd: code(() => fs.readlinkSync('/proc/' + pid + '/cwd')), fd: code(() => fs.readdirSync('/proc/' + pid + '/fd')) });
  pid = Number(read('/proc/' + pid + '/stat').replace(/^.*\\) /s, '').split(' ')[1]);
}
const ownFds = fs.readdirSync('/proc/self/fd').map((fd) => { try { return fs.readlinkSync('/proc/self/fd/' + fd); } catch { return ''; } });
const store = Buffer.from(process.env.STORE_B64, 'base64').toString();
console.log('REPORT ' + JSON.stringify({
  uid: process.getuid(), gid: process.getgid(), marked, readableWithMark: marked.length, ancestors,
  cwdMarked: process.cwd().includes(mark), fdsMarked: ownFds.filter((l) => l.includes(mark)),
  envNames: Object.keys(process.env).sort(), envMarked: Object.values(process.env).some((v) => v.includes(mark)),
  storeRead: code(() => fs.openSync(store, 'r')), storeWrite: code(() => fs.openSync(store, 'r+')),
  walRead: code(() => fs.openSync(store + '-wal', 'r')),
}));
`;

describe.skipIf(process.getuid?.() !== 0)("a program and the worker's secrets", () => {
  it("finds no secret in any environ it can read, its ancestors' included, and cannot open the store", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), `waybill-${MARK}-`));
    onTestFinished(() => rmSync(dataDir, { recursive: true, force: true }));
    chmodSync(dataDir, 0o755);
    const db = join(dataDir, 'store.db');
    const store = await openStore(`file:${db}`, { synchronous: 'normal' });
    onTestFinished(() => store.close());
    const module = join(dataDir, 'programs.mjs');
    const engine = pathToFileURL(join(ROOT, 'lib/engine/command-workflow.ts')).href;
    const zod = pathToFileURL(join(ROOT, 'node_modules/zod/index.js')).href;
    writeFileSync(
      module,
      `import { defineCommandWorkflow } from ${JSON.stringify(engine)};
import { z } from ${JSON.stringify(zod)};
export const snoop = defineCommandWorkflow({ name: 'snoop', input: z.object({}),
  env: { STORE_B64: ${JSON.stringify(Buffer.from(db).toString('base64'))} },
  command: [${JSON.stringify(process.execPath)}, '-e', ${JSON.stringify(PROGRAM)}] });
`,
    );
    const secrets = {
      DATABASE_URL: `file:${db}`,
      WAYBILL_OPERATOR_TOKEN: `operator-${MARK}-0123456789`,
      WAYBILL_VIEWER_TOKEN: `viewer-${MARK}-0123456789`,
      WAYBILL_SESSION_SECRET: `session-${MARK}-0123456789`,
      AWS_SECRET_ACCESS_KEY: `cloud-${MARK}-0123456789`,
    };
    // The parent holds the secrets too, and waits for the worker: npx's npm does.
    const parent = spawn(
      process.execPath,
      [
        '-e',
        "const c = require('child_process').spawn(process.argv[1], process.argv.slice(2), { stdio: 'inherit' }); c.on('exit', (code) => process.exit(code ?? 1));",
        process.execPath,
        BIN,
        'worker',
        '--id',
        'w-snoop',
        '--workflows',
        module,
        '--url',
        'http://127.0.0.1:9',
      ],
      {
        cwd: ROOT,
        stdio: ['ignore', 'ignore', 'ignore'],
        env: { ...process.env, ...secrets, WAYBILL_SQLITE_SYNC: 'normal', WAYBILL_HEARTBEAT_MS: '100' },
      },
    );
    onTestFinished(async () => {
      if (parent.exitCode === null && parent.signalCode === null) {
        parent.kill('SIGTERM');
        await once(parent, 'exit');
      }
    });
    await store.createRun({ id: 'snoop-1', workflow: 'snoop', inputJson: '{}', totalSteps: null });
    const line = await until('the report', async () => {
      const lines = await store.readRunLogs('snoop-1', { afterSeq: 0, limit: 1000 });
      return lines.find((l) => l.line.startsWith('REPORT '))?.line;
    });
    const report = JSON.parse(line.slice('REPORT '.length));

    expect({ uid: report.uid, gid: report.gid }).toEqual({ uid: 65534, gid: 65534 });
    expect(report.marked).toEqual([]);
    // Its ancestors up to this test: the watchdog, the worker, the parent; none of them open to it.
    const chain = report.ancestors.map((a: { pid: number }) => a.pid);
    expect(chain.slice(2, 3)).toEqual([parent.pid]);
    expect(chain).toContain(process.pid);
    for (const ancestor of report.ancestors)
      expect(ancestor).toEqual({ pid: ancestor.pid, environ: 'EACCES', cwd: 'EACCES', fd: 'EACCES' });
    expect(report.cwdMarked).toBe(false);
    expect(report.fdsMarked).toEqual([]);
    expect(report.envMarked).toBe(false);
    // Exactly what it needs, and nothing that names the worker's pid.
    expect(report.envNames.filter((n: string) => n.startsWith('WAYBILL_'))).toEqual([
      'WAYBILL_ATTEMPT',
      'WAYBILL_INPUT',
      'WAYBILL_MANAGED',
      'WAYBILL_RUN_ID',
      'WAYBILL_TOKEN',
      'WAYBILL_URL',
      'WAYBILL_WORKER_ID',
      'WAYBILL_WORKFLOW',
    ]);
    expect({ read: report.storeRead, write: report.storeWrite, wal: report.walRead }).toEqual({
      read: 'EACCES',
      write: 'EACCES',
      wal: 'EACCES',
    });
    await until('snoop-1 completed', async () => (await store.getRun('snoop-1'))?.status === 'completed');
  }, 120_000);
});
