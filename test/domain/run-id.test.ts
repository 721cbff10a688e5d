/**
 * One run-id lookup rule: the CLI (a real `waybill inspect` process) and the HTTP API (the real route handler
 * of GET /api/v1/runs/{id}) accept and refuse the same ids. Accepted means looked up (the run is not there:
 * exit 1, 404); refused means bad input (exit 2, 400). A new run's id keeps the stricter creation rule.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newRunIdProblem, runIdLookupProblem } from '../../lib/domain/run-id';
import { type Db, freshDb } from '../cli/support';
import { request } from '../support/http';
import { makeTempDir } from '../support/tmp';

const OPERATOR = 'runid-operator-token-0123456789ab';
const dir = makeTempDir('waybill-run-id-');
process.env.DATABASE_URL = `file:${dir.file('w.db')}`;
process.env.WAYBILL_OPERATOR_TOKEN = OPERATOR;
process.env.WAYBILL_SESSION_SECRET = 'runid-suite-session-secret-01234';

const { startRouteServer } = await import('../support/route-server');
const cache = globalThis as { waybillStore?: Promise<{ close(): Promise<void> }> };
let server: Awaited<ReturnType<typeof startRouteServer>>;

beforeAll(async () => {
  server = await startRouteServer();
});
afterAll(async () => {
  await server?.close();
  await (await cache.waybillStore?.catch(() => undefined))?.close();
  dir.remove();
});

// NUL cannot travel in a process's argv, so it is checked against the rule and the API only; an id that starts
// with a dash is one the CLI reads as a flag, so none does here.
const ACCEPTED = ['r1', 'a'.repeat(128), 'a'.repeat(129), 'a'.repeat(512), 'user@example.com/job:7', 'é-run', 'r%2F'];
const REFUSED = ['a'.repeat(513), 'a b', 'a\tb', 'a\u0001b', 'a\u007fb', 'a\nb'];

async function apiStatus(id: string): Promise<number> {
  return (await request(server.url, 'GET', `/api/v1/runs/${encodeURIComponent(id)}`, OPERATOR)).status;
}

describe('run ids', () => {
  it('the CLI and the API accept and refuse the same ids', async () => {
    const db: Db = await freshDb();
    const seen: Record<string, [boolean, number | null, number]> = {};
    for (const id of [...ACCEPTED, ...REFUSED]) {
      const cli = await db.cli(['inspect', id]);
      seen[JSON.stringify(id.length > 20 ? `${id.slice(0, 3)}…×${id.length}` : id)] = [
        runIdLookupProblem(id) === undefined,
        cli.code,
        await apiStatus(id),
      ];
    }
    const expected = Object.fromEntries(
      [...ACCEPTED, ...REFUSED].map((id) => [
        JSON.stringify(id.length > 20 ? `${id.slice(0, 3)}…×${id.length}` : id),
        ACCEPTED.includes(id) ? [true, 1, 404] : [false, 2, 400],
      ]),
    );
    expect(seen).toEqual(expected);
    expect(await apiStatus('a\u0000b')).toBe(400);
    expect(runIdLookupProblem('a\u0000b')).toBe('must not contain spaces or control characters');
  }, 120_000);

  it('a new run takes the stricter creation rule', () => {
    expect(newRunIdProblem('a:b-c.d_e')).toBeUndefined();
    expect(newRunIdProblem('a'.repeat(128))).toBeUndefined();
    expect(newRunIdProblem('a'.repeat(129))).toMatch(/128/);
    expect(newRunIdProblem('a@b')).toBe('letters, digits and . _ : - only, starting with a letter or digit');
    expect(newRunIdProblem('-r')).toBe('letters, digits and . _ : - only, starting with a letter or digit');
  });
});
