/**
 * bin/web.mjs's settings, checked before anything starts. The cluster itself (both workers serving, SIGTERM,
 * a dying worker) is e2e/web-cluster.spec.ts: it needs the production build, which the browser suite makes.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

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
});
