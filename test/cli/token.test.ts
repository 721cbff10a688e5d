/**
 * `waybill token` prints only a token the dashboard will accept (issue 23, item 5): the key is derived from
 * WAYBILL_SESSION_SECRET and the tokens, nothing is shared through the store, so a shell without the
 * server's signs with another key. The CLI asks the dashboard at WAYBILL_URL and refuses, naming what to set;
 * with neither a key nor WAYBILL_URL it refuses too. A refusal prints no token and writes no audit line.
 * Real processes against the route handlers on a real port, with sign-in on.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createServer } from 'node:net';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeTempDir } from '../support/tmp';
import { BIN, type Result, ROOT } from './support';

const OPERATOR = 'token-cli-operator-token-0123456789';
const VIEWER = 'token-cli-viewer-token-0123456789ab';
const SECRET = 'token-cli-session-secret-01234567';
const dir = makeTempDir('waybill-token-cli-');
const DB = dir.file('w.db');
process.env.DATABASE_URL = `file:${DB}`;
process.env.WAYBILL_OPERATOR_TOKEN = OPERATOR;
process.env.WAYBILL_VIEWER_TOKEN = VIEWER;
process.env.WAYBILL_SESSION_SECRET = SECRET;

const { startRouteServer } = await import('../support/route-server');
const cache = globalThis as { waybillStore?: Promise<{ close(): Promise<void> }> };
let server: Awaited<ReturnType<typeof startRouteServer>>;

beforeAll(async () => {
  server = await startRouteServer();
  // The route's modules load on its first request: not inside a CLI's probe.
  await fetch(`${server.url}/api/v1/runs/warm/committed`);
});
afterAll(async () => {
  await server?.close();
  await (await cache.waybillStore?.catch(() => undefined))?.close();
  dir.remove();
});

/** `waybill token` with only the environment given: none of this process's WAYBILL_* leaks in. */
function token(args: string[], env: Record<string, string>): Promise<Result> {
  const base = Object.fromEntries(
    Object.entries(process.env).filter(([k]) => !k.startsWith('WAYBILL_')),
  ) as NodeJS.ProcessEnv;
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, 'token', ...args], {
      cwd: ROOT,
      env: { ...base, DATABASE_URL: `file:${DB}`, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (c: string) => (stdout += c));
    child.stderr.setEncoding('utf8').on('data', (c: string) => (stderr += c));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

const audited = (runId: string) => {
  if (!existsSync(DB)) return 0;
  const db = new Database(DB, { readonly: true });
  try {
    return (
      db.prepare("SELECT count(*) AS n FROM audit WHERE action = 'token' AND target = ?").get(runId) as {
        n: number;
      }
    ).n;
  } finally {
    db.close();
  }
};

const SET =
  "set WAYBILL_SESSION_SECRET, WAYBILL_OPERATOR_TOKEN and WAYBILL_VIEWER_TOKEN here as the dashboard's server has them";
const ANYONE =
  'a key anyone can derive (no WAYBILL_SESSION_SECRET, WAYBILL_OPERATOR_TOKEN or WAYBILL_VIEWER_TOKEN is set here)';

describe('waybill token', () => {
  it('refuses in a shell with no key and no WAYBILL_URL, naming the variables', async () => {
    const result = await token(['--run', 'tok-none'], {});
    expect(result).toEqual({
      code: 2,
      stdout: '',
      stderr: `waybill token: refused: a token signed here would use ${ANYONE}, and a dashboard with sign-in answers it 401. ${SET}, or set WAYBILL_URL to the dashboard so that waybill token can ask it\n`,
    });
    expect(audited('tok-none')).toBe(0);
  });

  it('refuses when the dashboard at WAYBILL_URL would answer 401: no key here, or another secret', async () => {
    const bare = await token(['--run', 'tok-bare'], { WAYBILL_URL: server.url });
    expect([bare.code, bare.stdout]).toEqual([2, '']);
    expect(bare.stderr).toBe(
      `waybill token: refused: the dashboard at ${server.url} does not accept tokens signed here (401: the run token is not valid here (malformed, forged, or signed with a secret since rotated)), because they are signed with ${ANYONE}: ${SET}\n`,
    );
    const other = await token(['--run', 'tok-other'], {
      WAYBILL_URL: server.url,
      WAYBILL_SESSION_SECRET: 'another-secret-entirely-0123',
      WAYBILL_OPERATOR_TOKEN: OPERATOR,
      WAYBILL_VIEWER_TOKEN: VIEWER,
    });
    expect([other.code, other.stdout]).toEqual([2, '']);
    expect(other.stderr).toContain(
      "because they are signed with this shell's WAYBILL_SESSION_SECRET and tokens, not the server's",
    );
    expect(audited('tok-bare') + audited('tok-other')).toBe(0);
  });

  it("prints a token the dashboard accepts when the shell has the server's key", async () => {
    const result = await token(['--run', 'tok-same', '--json'], {
      WAYBILL_URL: server.url,
      WAYBILL_SESSION_SECRET: SECRET,
      WAYBILL_OPERATOR_TOKEN: OPERATOR,
      WAYBILL_VIEWER_TOKEN: VIEWER,
    });
    expect([result.code, result.stderr]).toEqual([0, '']);
    const minted = JSON.parse(result.stdout) as { token: string; runId: string };
    expect(minted.runId).toBe('tok-same');
    // The agent's first write with it: accepted.
    const answer = await fetch(`${server.url}/api/v1/checkpoint/tok-same/progress`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${minted.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ step: 1, state: {} }),
    });
    expect(answer.status).toBe(200);
    expect(audited('tok-same')).toBe(1);
  });

  it('refuses with no key when the dashboard cannot be reached to check', async () => {
    // A port just closed: nothing listens there.
    const port = await new Promise<number>((resolve) => {
      const probe = createServer().listen(0, '127.0.0.1', () => {
        const { port } = probe.address() as { port: number };
        probe.close(() => resolve(port));
      });
    });
    const result = await token(['--run', 'tok-down'], { WAYBILL_URL: `http://127.0.0.1:${port}` });
    expect([result.code, result.stdout]).toEqual([2, '']);
    expect(result.stderr).toBe(
      `waybill token: refused: cannot reach the dashboard at http://127.0.0.1:${port} (ECONNREFUSED) to check a token signed with ${ANYONE}: start it, or ${SET}\n`,
    );
  });
});
