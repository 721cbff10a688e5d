/**
 * examples/python_agent.py: the Python client (installed from the checkout into a fresh venv, no index)
 * against the HTTP protocol served by the real route handlers, with a run token from `waybill token`.
 * SIGKILLed mid-run and run again, it resumes; every step is committed once, and only the one in flight at
 * the kill may have been called twice.
 */
import { spawnSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BIN } from '../cli/support';
import { pythonMissing, sharedVenv } from '../python/venv';
import { request } from '../support/http';
import { makeTempDir } from '../support/tmp';
import { counts, exampleProject, succeeds, until } from './project';

const OPERATOR = 'example-operator-token-012345678';
const dir = makeTempDir('waybill-example-py-');
process.env.DATABASE_URL = `file:${dir.file('w.db')}`;
process.env.WAYBILL_OPERATOR_TOKEN = OPERATOR;
process.env.WAYBILL_SESSION_SECRET = 'example-suite-session-secret-012';
// The agent asks for 1.5 s leases (so the rerun need not wait out 10 s); the server's bound on SQLite.
process.env.WAYBILL_LEASE_MS = '1500';

const missing = pythonMissing();
if (missing && process.env.CI === 'true')
  throw new Error(`test/examples needs python3 with venv under CI=true: ${missing}`);
if (missing) console.warn(`\n*** test/examples/python SKIPPED: ${missing} ***\n`);

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

describe.skipIf(missing !== null)('examples/python_agent.py', () => {
  it('with a run token: SIGKILLed mid-run and run again, it completes; each step once but the one in flight', async () => {
    const project = exampleProject('python_agent.py');
    const minted = spawnSync(process.execPath, [BIN, 'token', '--run', 'py-notes-1'], { encoding: 'utf8' });
    expect(minted.status, minted.stderr).toBe(0);
    const env = {
      WAYBILL_URL: server.url,
      WAYBILL_RUN_ID: 'py-notes-1',
      WAYBILL_TOKEN: minted.stdout.trim(),
      WAYBILL_LEASE_MS: '1500',
      PYTHONDONTWRITEBYTECODE: '1',
    };
    const committed = async () =>
      (await request(server.url, 'GET', '/api/v1/runs/py-notes-1', OPERATOR)).body.counts.committed as number;

    const first = project.spawn(python, ['python_agent.py'], env);
    await until('three steps', () => project.lines('effects.log').length >= 3);
    first.kill('SIGKILL');
    expect((await first.exited).signal).toBe('SIGKILL');
    const calledAtKill = project.lines('effects.log').length;
    const committedAtKill = await committed();
    expect(calledAtKill - committedAtKill).toBeGreaterThanOrEqual(0);
    expect(calledAtKill - committedAtKill).toBeLessThanOrEqual(1);

    const lines = await succeeds(project.spawn(python, ['python_agent.py'], env));
    expect(lines.at(-1)).toBe(`{'processed': 8, 'executed': ${8 - committedAtKill}, 'skipped': 0, 'awaited': 0}`);
    const called = project.lines('effects.log');
    expect(called).toHaveLength(calledAtKill + 8 - committedAtKill);
    expect(Object.keys(counts(called)).sort()).toEqual(
      Array.from({ length: 8 }, (_, n) => `py-notes-1:step:${n}`).sort(),
    );
    expect(await committed()).toBe(8);
    const listed = await request(server.url, 'GET', '/api/v1/runs?workflow=py-notes', OPERATOR);
    expect(listed.body.runs).toEqual([
      expect.objectContaining({ id: 'py-notes-1', status: 'completed', step: 8, totalSteps: 8 }),
    ]);
  }, 120_000);
});
