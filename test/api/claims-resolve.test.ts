/**
 * Resolving a claim by hand through the HTTP route and the dashboard's server action, on a real SQLite file:
 * a claim whose lease is live, or that a worker took over after the operator saw it orphaned, is refused
 * (409 in the API's error shape, a message in the action) with nothing committed, no event and no audit line.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeEach, describe, expect, it, vi } from 'vitest';
import type { SqliteStore } from '../../lib/store/sqlite';
import { makeTempDir } from '../support/tmp';

const dir = makeTempDir('waybill-resolve-route-');
// The handlers read their store through lib/config, like the server: set before the first import of it.
process.env.DATABASE_URL = `file:${dir.file('w.db')}`;
const operator = { actor: 'olga', role: 'operator' as const };
// The action reads next/headers for its caller; the route judges its Request, as in production.
vi.mock('@/lib/auth/server', async (actual) => ({ ...(await actual<object>()), requireAction: async () => operator }));
vi.mock('next/cache', () => ({ revalidatePath: () => undefined }));
const { POST } = await import('../../app/api/v1/claims/resolve/route');
const { resolveClaimAction } = await import('../../app/actions/claims');
const { getStore } = await import('../../lib/data/store');
const store = (await getStore()) as unknown as SqliteStore & Awaited<ReturnType<typeof getStore>>;

afterAll(async () => {
  await store.close();
  dir.remove();
});

beforeEach(() => {
  store.db.exec('DELETE FROM claims; DELETE FROM committed; DELETE FROM step_events; DELETE FROM audit');
});

const now = () => Date.now() / 1000;
/** A worker's claim on `key` whose lease passed (orphaned: its side effect is in doubt) or is live. */
function insertClaim(key: string, leaseEndsInS: number) {
  store.db
    .prepare(`INSERT INTO claims (idem_key, run_id, claimed_at, token, worker_id, lease_expires_at, heartbeat_at, step, attempt)
    VALUES (?, 'r1', ?, ?, 'w1', ?, ?, 3, 1)`)
    .run(key, now() - 120, randomUUID(), now() + leaseEndsInS, now() - 120);
}
const post = (body: unknown) =>
  POST(
    new Request('http://127.0.0.1:3000/api/v1/claims/resolve', {
      method: 'POST',
      headers: { host: '127.0.0.1:3000', 'content-type': 'application/json' },
      body: JSON.stringify(body),
    }),
  );
const form = (fields: Record<string, string>) => {
  const data = new FormData();
  for (const [k, v] of Object.entries(fields)) data.set(k, v);
  return data;
};
const written = async () => ({
  committed: store.db.prepare('SELECT idem_key AS key, source FROM committed').all(),
  events: (await store.listEvents('r1')).map((e) => e.outcome),
  audit: (await store.listAudit()).map((a) => [a.action, a.target]),
});
const nothingWritten = { committed: [], events: [], audit: [] };

describe('POST /api/v1/claims/resolve', () => {
  it('refuses a live claim with 409 CONFLICT and writes nothing; resolves and audits an orphaned one', async () => {
    insertClaim('k-live', 60);
    const refused = await post({ key: 'k-live', result: { sent: true } });
    expect(refused.status).toBe(409);
    const body = await refused.json();
    expect(Object.keys(body)).toEqual(['error']);
    expect(body.error).toMatchObject({ code: 'CONFLICT', message: expect.stringContaining('"force": true') });
    expect(await written()).toEqual(nothingWritten);

    insertClaim('k-orphan', -60);
    const done = await post({ key: 'k-orphan', result: { sent: true }, note: 'provider confirms', attempt: 1 });
    expect([done.status, await done.json()]).toEqual([200, { key: 'k-orphan', runId: 'r1', resolved: true }]);
    expect(await written()).toEqual({
      committed: [{ key: 'k-orphan', source: 'manual' }],
      events: ['resolved'],
      audit: [['resolve', 'k-orphan']],
    });
  });

  it('refuses, with what the operator saw, a claim a worker took over since; the worker then commits', async () => {
    insertClaim('k', -60);
    const [seen] = (
      await (
        await import('../../app/api/v1/claims/route')
      )
        .GET(new Request('http://127.0.0.1:3000/api/v1/claims?orphaned=true', { headers: { host: '127.0.0.1:3000' } }))
        .then((r) => r.json())
    ).claims;
    expect(seen).toMatchObject({ key: 'k', attempt: 1, orphaned: true });

    const token = randomUUID();
    expect(
      await store.claim({
        idemKey: 'k',
        runId: 'r1',
        token,
        workerId: 'w2',
        step: 3,
        attempt: 1,
        leaseMs: 60_000,
        claimTtlMs: 60_000,
      }),
    ).toMatchObject({ kind: 'claimed', attempt: 2 });
    for (const body of [
      { key: 'k', result: 1, attempt: seen.attempt },
      { key: 'k', result: 1, attempt: seen.attempt, force: true },
      { key: 'k', result: 1 },
    ]) {
      const refused = await post(body);
      expect(refused.status).toBe(409);
      expect((await refused.json()).error.code).toBe('CONFLICT');
    }
    expect(await written()).toEqual({ ...nothingWritten, events: ['expired'] });

    await store.commit({
      idemKey: 'k',
      token,
      runId: 'r1',
      resultJson: '"w2"',
      step: 3,
      fingerprint: null,
      workerId: 'w2',
      durationMs: 1,
    });
    expect(await written()).toEqual({ committed: [{ key: 'k', source: 'executed' }], events: ['expired'], audit: [] });
  });
});

describe('resolveClaimAction', () => {
  it('says why it refused a live claim or one taken over since, writing nothing; audits a resolve once done', async () => {
    insertClaim('k-live', 60);
    expect(await resolveClaimAction(null, form({ key: 'k-live', result: '{"sent": true}', attempt: '1' }))).toEqual({
      ok: false,
      message: 'its lease is live: resolve only claims whose side effect is in doubt',
    });
    // The form was opened on attempt 1; a worker has taken the claim over since.
    store.db.prepare("UPDATE claims SET attempt = 2, worker_id = 'w2' WHERE idem_key = 'k-live'").run();
    expect(
      await resolveClaimAction(null, form({ key: 'k-live', result: '{"sent": true}', attempt: '1' })),
    ).toMatchObject({ ok: false, message: expect.stringMatching(/took the claim over since you saw it/) });
    expect(await resolveClaimAction(null, form({ key: 'k-none', result: '1' }))).toEqual({
      ok: false,
      message: 'there is no claim on that key any more',
    });
    expect(await written()).toEqual(nothingWritten);

    insertClaim('k-orphan', -60);
    expect(
      await resolveClaimAction(
        null,
        form({ key: 'k-orphan', result: '{"sent": true}', note: 'checked', attempt: '1' }),
      ),
    ).toEqual({ ok: true, message: 'resolved k-orphan by hand' });
    expect(await written()).toEqual({
      committed: [{ key: 'k-orphan', source: 'manual' }],
      events: ['resolved'],
      audit: [['resolve', 'k-orphan']],
    });
  });
});
