/**
 * What the README promises of a Python agent's failures: a wrong WAYBILL_URL, a wrong token, a token for
 * another run and an operator's pause are each one line on stderr and a non-zero exit, not a traceback from
 * inside urllib; WAYBILL_DEBUG=1 asks for the traceback. Run as the README's own agent.py (read from its
 * block), in a fresh venv, against the real route handlers.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BIN } from '../cli/support';
import { spawnCommand } from '../support/child';
import { request } from '../support/http';
import { makeTempDir } from '../support/tmp';
import { readmeAgent } from './readme';
import { pythonMissing, sharedVenv } from './venv';

const OPERATOR = 'oneline-operator-token-012345678';
const dir = makeTempDir('waybill-py-oneline-');
process.env.DATABASE_URL = `file:${dir.file('w.db')}`;
process.env.WAYBILL_OPERATOR_TOKEN = OPERATOR;
process.env.WAYBILL_SESSION_SECRET = 'oneline-suite-session-secret-012';

const missing = pythonMissing();
if (missing && process.env.CI === 'true')
  throw new Error(`test/python needs python3 with venv under CI=true: ${missing}`);

const { startRouteServer } = await import('../support/route-server');
const cache = globalThis as { waybillStore?: Promise<{ close(): Promise<void> }> };
let server: Awaited<ReturnType<typeof startRouteServer>>;
let python = '';
const project = dir.file('my-agent');

beforeAll(async () => {
  server = await startRouteServer();
  // The store exists (migrated) before `waybill token`, which, like every read, creates none.
  await (await import('../../lib/data/store')).getStore();
  if (missing) return;
  python = await sharedVenv();
  mkdirSync(project);
  writeFileSync(join(project, 'agent.py'), readmeAgent());
}, 400_000); // a venv and a pip install: seconds when quiet, minutes on busy cores
afterAll(async () => {
  await server?.close();
  await (await cache.waybillStore?.catch(() => undefined))?.close();
  dir.remove();
});

const token = (runId: string) => {
  const minted = spawnSync(process.execPath, [BIN, 'token', '--run', runId], { encoding: 'utf8' });
  if (minted.status !== 0) throw new Error(`waybill token failed: ${minted.stderr}`);
  return minted.stdout.trim();
};

/** A port nothing listens on: bound, read, closed. */
async function deadPort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as { port: number };
  await new Promise((resolve) => probe.close(resolve));
  return port;
}

function agent(env: Record<string, string>) {
  return spawnCommand(python, ['agent.py'], { env: { PYTHONDONTWRITEBYTECODE: '1', ...env }, cwd: project });
}

async function failure(env: Record<string, string>) {
  const child = agent(env);
  const exit = await child.exited;
  return { code: exit.code, stderr: child.stderr(), stdout: child.lines };
}

describe.skipIf(missing !== null)("the README's agent.py fails in one line", () => {
  it('a wrong WAYBILL_URL: one line naming the address, exit 1; WAYBILL_DEBUG=1 shows the traceback', async () => {
    const url = `http://127.0.0.1:${await deadPort()}`;
    const env = { WAYBILL_URL: url, WAYBILL_RUN_ID: 'url-1', WAYBILL_TOKEN: token('url-1') };
    const plain = await failure(env);
    expect(plain.code).toBe(1);
    expect(plain.stderr).toMatch(
      new RegExp(
        `^agent\\.py: cannot reach Waybill at ${url.replace(/\./g, '\\.')}: .+ after 3 attempts \\(is the dashboard running, and is WAYBILL_URL right\\?\\)\\n$`,
      ),
    );
    const debug = await failure({ ...env, WAYBILL_DEBUG: '1' });
    expect(debug.code).toBe(1);
    expect(debug.stderr).toMatch(/^Traceback \(most recent call last\):\n/);
    expect(debug.stderr).toMatch(/\nwaybill_client\.errors\.ConnectionFailedError: cannot reach Waybill at /);
  });

  it('a token that is no token: UNAUTHENTICATED in one line, exit 1', async () => {
    const plain = await failure({
      WAYBILL_URL: server.url,
      WAYBILL_RUN_ID: 'tok-1',
      WAYBILL_TOKEN: 'not-a-real-token',
    });
    expect(plain.code).toBe(1);
    expect(plain.stderr).toMatch(
      /^agent\.py: POST http:\/\/127\.0\.0\.1:\d+\/api\/v1\/checkpoint\/[^ ]+: UNAUTHENTICATED \(HTTP 401\): [^\n]+\n$/,
    );
  });

  it("another run's token: FORBIDDEN in one line, exit 1, and nothing ran", async () => {
    const plain = await failure({
      WAYBILL_URL: server.url,
      WAYBILL_RUN_ID: 'mine-1',
      WAYBILL_TOKEN: token('theirs-1'),
    });
    expect(plain.code).toBe(1);
    expect(plain.stderr).toMatch(
      /^agent\.py: [A-Z]+ http:\/\/127\.0\.0\.1:\d+\/api\/v1\/checkpoint\/[^ ]+: FORBIDDEN \(HTTP 403\): [^\n]+\n$/,
    );
    expect(existsSync(join(project, 'effects.log'))).toBe(false);
  });

  it('paused by an operator mid-run: RunPausedError in one line, exit 1, after the step in hand', async () => {
    const child = agent({ WAYBILL_URL: server.url, WAYBILL_RUN_ID: 'pause-1', WAYBILL_TOKEN: token('pause-1') });
    const effects = join(project, 'effects.log');
    for (let i = 0; !(existsSync(effects) && readFileSync(effects, 'utf8').includes('pause-1:step:1\n')); i++) {
      if (i > 2000) throw new Error(`agent.py made no progress: ${child.stderr()}`);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    const paused = await request(server.url, 'POST', '/api/v1/runs/pause-1/pause', OPERATOR, {});
    expect(paused.status, JSON.stringify(paused.body)).toBe(200);
    const exit = await child.exited;
    expect(exit.code).toBe(1);
    expect(child.stderr()).toMatch(
      /^agent\.py: run pause-1 was paused; stopped before step \d+ \(resume it, then run this again\)\n$/,
    );
  });
});
