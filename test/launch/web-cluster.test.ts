/**
 * bin/web.mjs's settings, checked before anything starts, and its stop when a process does not end on SIGTERM.
 * The cluster serving Next (both workers serving, SIGTERM, a dying worker) is e2e/web-cluster.spec.ts: it needs
 * the production build, which the browser suite makes.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { pidAlive } from '../../lib/machine';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const WEB = fileURLToPath(new URL('../../bin/web.mjs', import.meta.url));
const PORT = 3597;

describe('bin/web.mjs settings', () => {
  it('refuses a bad WAYBILL_WEB_PROCESSES before starting anything: exit 2, naming it', async () => {
    const proc = spawn(process.execPath, [WEB, '--port', String(PORT)], {
      cwd: ROOT,
      env: { ...process.env, WAYBILL_WEB_PROCESSES: '0' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    proc.stderr.setEncoding('utf8').on('data', (c: string) => (stderr += c));
    const [code] = await once(proc, 'close');
    expect(code).toBe(2);
    expect(stderr).toContain('WAYBILL_WEB_PROCESSES: must be a whole number, 1-64');
  });

  it('kills a process that does not stop on SIGTERM, saying so, and exits', async () => {
    const deaf = fileURLToPath(new URL('../fixtures/deaf-server.mjs', import.meta.url));
    const proc = spawn(process.execPath, [WEB, '--server', deaf, '--port', String(PORT), '--hostname', '127.0.0.1'], {
      cwd: ROOT,
      env: { ...process.env, WAYBILL_WEB_PROCESSES: '2' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    proc.stdout.setEncoding('utf8').on('data', (c: string) => (stdout += c));
    proc.stderr.setEncoding('utf8').on('data', (c: string) => (stderr += c));
    const closed = once(proc, 'close');
    while (!stdout.includes('all 2 listening')) {
      if (proc.exitCode !== null) throw new Error(`bin/web.mjs exited: ${stderr}`);
      await new Promise((r) => setTimeout(r, 50));
    }
    const pids = /pids (\d+), (\d+)/.exec(stdout)!.slice(1).map(Number);
    proc.kill('SIGTERM');
    const [code] = await closed;
    expect(stdout.match(/deaf: SIGTERM ignored/g)).toHaveLength(2);
    expect(stderr.match(/process \d+ did not stop within 10 s of SIGTERM; killing it/g)).toHaveLength(2);
    expect(code).toBe(0);
    expect(pids.filter(pidAlive)).toEqual([]);
  }, 60_000);
});
