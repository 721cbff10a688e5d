/**
 * `npm start` refuses to listen beyond loopback without a token, and says which variable to set; with a token
 * the gate opens. Real processes (node bin/start.mjs), real exit codes. The passing case is proved without
 * serving anything: HOST is an address no interface here has (TEST-NET-1), so the launcher gets past the
 * gate and then fails to bind, exit 1, before it builds, opens a store or starts a child.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { tempDir } from '../support/tmp';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const START = fileURLToPath(new URL('../../bin/start.mjs', import.meta.url));
const TOKEN = 'launch-test-operator-token-0123456789';
/** RFC 5737 documentation range: routable-looking, never assigned to a machine. */
const UNASSIGNED = '192.0.2.10';

async function start(env: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string }> {
  // Only what this test sets: an operator's own WAYBILL_* or HOST must not leak in and change the answer.
  const base = Object.fromEntries(
    Object.entries(process.env).filter(([k]) => !k.startsWith('WAYBILL_') && k !== 'HOST' && k !== 'PORT'),
  ) as NodeJS.ProcessEnv;
  const dir = tempDir('waybill-launch-');
  const proc = spawn(process.execPath, [START, '--no-worker', '--no-demo'], {
    cwd: ROOT,
    env: { ...base, DATABASE_URL: `file:${dir.file('w.db')}`, PORT: '3599', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  proc.stdout.setEncoding('utf8').on('data', (c: string) => (stdout += c));
  proc.stderr.setEncoding('utf8').on('data', (c: string) => (stderr += c));
  const [code] = await once(proc, 'close');
  return { code: code as number | null, stdout, stderr };
}

describe('npm start beyond loopback', () => {
  it.each(['0.0.0.0', '::', UNASSIGNED])(
    'refuses HOST=%s without a token: exit 2, naming WAYBILL_OPERATOR_TOKEN',
    async (host) => {
      const out = await start({ HOST: host });
      expect(out.code).toBe(2);
      expect(out.stderr).toContain(`HOST=${host} would open the dashboard beyond this machine with no sign-in`);
      expect(out.stderr).toContain('Set WAYBILL_OPERATOR_TOKEN');
      // Stopped at the gate: no store opened, nothing started.
      expect(out.stdout).toBe('');
    },
  );

  it('passes the gate with an operator token (and then stops at the bind, serving nothing)', async () => {
    const out = await start({ HOST: UNASSIGNED, WAYBILL_OPERATOR_TOKEN: TOKEN });
    expect(out.code).toBe(1);
    expect(out.stderr).not.toContain('WAYBILL_OPERATOR_TOKEN');
    expect(out.stderr).toContain(`cannot listen on ${UNASSIGNED}:3599`);
    expect(out.stdout).toBe('');
  });

  it('passes the gate with only a viewer token too: someone must sign in to see anything', async () => {
    const out = await start({ HOST: UNASSIGNED, WAYBILL_VIEWER_TOKEN: TOKEN });
    expect(out.code).toBe(1);
    expect(out.stderr).toContain(`cannot listen on ${UNASSIGNED}:3599`);
  });
});
