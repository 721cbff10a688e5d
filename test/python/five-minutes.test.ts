/**
 * README's "The same five minutes in Python", run: its agent.py (read from the section's tagged block, so the
 * two cannot drift) in a fresh venv with the package installed with no index, against the real route
 * handlers, with a token from `waybill token`; killed with SIGKILL mid-run and run again, it completes with
 * every note's call made once, except at most the one in flight at the kill.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BIN } from '../cli/support';
import { spawnCommand } from '../support/child';
import { request } from '../support/http';
import { makeTempDir } from '../support/tmp';
import { readmeAgent } from './readme';
import { pythonMissing, sharedVenv } from './venv';

const OPERATOR = 'five-operator-token-0123456789ab';
const dir = makeTempDir('waybill-py-five-');
process.env.DATABASE_URL = `file:${dir.file('w.db')}`;
process.env.WAYBILL_OPERATOR_TOKEN = OPERATOR;
process.env.WAYBILL_SESSION_SECRET = 'five-suite-session-secret-012345';
// The agent asks for 1.5 s leases; the server's own lease bounds what it grants on SQLite.
process.env.WAYBILL_LEASE_MS = '1500';

const missing = pythonMissing();
if (missing && process.env.CI === 'true')
  throw new Error(`test/python needs python3 with venv under CI=true: ${missing}`);

const { startRouteServer } = await import('../support/route-server');
const cache = globalThis as { waybillStore?: Promise<{ close(): Promise<void> }> };
let server: Awaited<ReturnType<typeof startRouteServer>>;
let python = '';

beforeAll(async () => {
  server = await startRouteServer();
  // The store exists (migrated) before `waybill token`, which, like every read, creates none.
  await (await import('../../lib/data/store')).getStore();
  if (!missing) python = await sharedVenv();
}, 400_000); // a venv and a pip install: seconds when quiet, minutes on busy cores
afterAll(async () => {
  await server?.close();
  await (await cache.waybillStore?.catch(() => undefined))?.close();
  dir.remove();
});

describe.skipIf(missing !== null)('README: the same five minutes in Python', () => {
  it('agent.py with a run token: killed mid-run and run again, it completes; each call once but the one in flight', async () => {
    const project = dir.file('my-agent');
    spawnSync('mkdir', ['-p', project]);
    writeFileSync(join(project, 'agent.py'), readmeAgent());
    const minted = spawnSync(process.execPath, [BIN, 'token', '--run', 'py-1'], { encoding: 'utf8' });
    expect(minted.status, minted.stderr).toBe(0);
    // The README's environment; a shorter lease than the 10 s default so the rerun need not wait it out.
    const env = {
      WAYBILL_URL: server.url,
      WAYBILL_RUN_ID: 'py-1',
      WAYBILL_TOKEN: minted.stdout.trim(),
      WAYBILL_LEASE_MS: '1500',
    };
    const effects = join(project, 'effects.log');
    const lines = () => (existsSync(effects) ? readFileSync(effects, 'utf8').split('\n').filter(Boolean) : []);

    const first = spawnCommand(python, ['agent.py'], { env, cwd: project });
    for (let i = 0; lines().length < 5; i++) {
      if (i > 400) throw new Error(`agent.py made no progress: ${first.stderr()}`);
      await sleep(25);
    }
    first.kill('SIGKILL');
    expect((await first.exited).signal).toBe('SIGKILL');
    const beforeRerun = lines().length;
    const second = spawnCommand(python, ['agent.py'], { env, cwd: project });
    const exit = await second.exited;
    expect(exit.code, second.stderr()).toBe(0);
    expect(second.lines.at(-1)).toMatch(/^\{'processed': 20, 'executed': \d+, 'skipped': 0, 'awaited': 0\}$/);

    const keys = lines();
    expect(new Set(keys)).toEqual(new Set(Array.from({ length: 20 }, (_, n) => `py-1:step:${n}`)));
    // The one call in flight at the kill may have been made twice, nothing else.
    expect(keys.length - 20).toBeLessThanOrEqual(1);
    expect(beforeRerun).toBeGreaterThanOrEqual(5);
    const listed = await request(server.url, 'GET', '/api/v1/runs?workflow=py-summaries', OPERATOR);
    expect(listed.body.runs).toEqual([
      expect.objectContaining({ id: 'py-1', status: 'completed', step: 20, totalSteps: 20 }),
    ]);
  }, 120_000);
});
