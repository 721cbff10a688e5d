/**
 * Issue 27: a run its workflow's limits hold back says why wherever runs are shown. On one real SQLite file, a
 * live worker with free slots serves two limited workflows: `per-customer` (1 running per customer) with acme's
 * first run running, and `rated` (1 start a minute) with its first run started. The second run of each is held,
 * and GET /api/v1/runs/{id}, GET /api/v1/runs, `waybill runs` and `waybill inspect` (JSON and text) all carry
 * the same reason: "1 of 1 runs for key acme are running", "rate limit of 1 starts per minute of workflow rated:
 * next slot in N s". The reasoning itself is the store contract's (test/contract/run-limits.test.ts, both
 * backends); this checks that every view shows it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openSqliteStore } from '../../lib/store/sqlite';
import { json, runCli } from '../cli/support';
import { type Answer, request } from '../support/http';
import { serveApi } from '../support/route-server';
import { makeTempDir } from '../support/tmp';

const VIEWER = 'held-viewer-token-0123456789abcdef';
const CONCURRENCY = {
  kind: 'held',
  workflow: 'per-customer',
  limit: 'concurrency',
  key: 'acme',
  message: '1 of 1 runs for key acme are running',
};
const RATE = /^rate limit of 1 starts per minute of workflow rated: next slot in (\d+\.\d) s$/;

describe('a held run says why on the API and the CLI', () => {
  const dir = makeTempDir('waybill-api-held-');
  const file = dir.file('h.db');
  const db = ['--db', `file:${file}`];
  let server: { url: string; close(): Promise<void> };
  /** When the rated run's start was taken (ms, before it): its next slot is at most a minute after this. */
  let startedBy = 0;
  const api = (path: string): Promise<Answer> => request(server.url, 'GET', path, VIEWER);

  beforeAll(async () => {
    const seed = openSqliteStore({ path: file });
    await seed.registerWorker({ id: 'w-1', host: 'h', pid: 1, slots: 4 });
    await seed.publishWorkflows('w-1', [
      {
        name: 'per-customer',
        description: null,
        inputSchemaJson: '{}',
        totalSteps: 1,
        version: null,
        limits: { concurrency: { limit: 1, key: 'customer' } },
      },
      {
        name: 'rated',
        description: null,
        inputSchemaJson: '{}',
        totalSteps: 1,
        version: null,
        limits: { rateLimit: { limit: 1, periodMs: 60_000, key: null } },
      },
    ]);
    for (const id of ['acme-1', 'acme-2'])
      await seed.createRun({ id, workflow: 'per-customer', inputJson: '{"customer":"acme"}', totalSteps: 1 });
    for (const id of ['rated-1', 'rated-2'])
      await seed.createRun({ id, workflow: 'rated', inputJson: '{}', totalSteps: 1 });
    startedBy = Date.now();
    for (const runId of ['acme-1', 'rated-1'])
      expect(
        (await seed.claimRun({ workerId: 'w-1', leaseMs: 3_600_000, workflows: ['per-customer', 'rated'], runId }))?.id,
      ).toBe(runId);
    // Beating "in an hour": live however slowly the processes below start. Its 2 busy slots of 4 leave two free,
    // so nothing but the limits holds the second runs back.
    seed.db.prepare(`UPDATE workers SET heartbeat_at = ? WHERE id = 'w-1'`).run(Date.now() / 1000 + 3600);
    await seed.close();
    server = await serveApi(file, {
      operator: 'held-operator-token-0123456789abcd',
      viewer: VIEWER,
      sessionSecret: 'held-suite-session-secret-0123456',
    });
  });
  afterAll(async () => {
    await server?.close();
    dir.remove();
  });

  /**
   * The rate reason's next slot: a minute after rated-1's start, so in (60 − seconds since startedBy, 60]. A
   * bound by the test's own elapsed time, read after the answer came: it holds however slow the machine.
   */
  function expectRateReason(reason: { nextSlotInS?: number; message?: string } | null, readBy: number) {
    expect(reason).toMatchObject({ kind: 'held', workflow: 'rated', limit: 'rate', key: '' });
    const next = reason!.nextSlotInS!;
    expect(next).toBeLessThanOrEqual(60);
    expect(next).toBeGreaterThanOrEqual(60 - (readBy - startedBy) / 1000);
    expect(reason!.message).toBe(
      `rate limit of 1 starts per minute of workflow rated: next slot in ${next.toFixed(1)} s`,
    );
  }

  it("the API's run and its list carry the held run's reason", async () => {
    const [acme, rated, list] = await Promise.all([
      api('/api/v1/runs/acme-2'),
      api('/api/v1/runs/rated-2'),
      api('/api/v1/runs?limit=50'),
    ]);
    const readBy = Date.now();
    expect([acme.status, rated.status, list.status]).toEqual([200, 200, 200]);
    expect(acme.body.run.queuedReason).toEqual(CONCURRENCY);
    expectRateReason(rated.body.run.queuedReason, readBy);
    const byId = Object.fromEntries(
      list.body.runs.map((r: { id: string; queuedReason: unknown }) => [r.id, r.queuedReason]),
    );
    // The running ones wait for nothing.
    expect(byId['acme-1']).toBeNull();
    expect(byId['rated-1']).toBeNull();
    expect(byId['acme-2']).toEqual(CONCURRENCY);
    expectRateReason(byId['rated-2'], readBy);
  });

  it('`waybill runs` and `waybill inspect` carry it, as JSON and as text', async () => {
    const [listed, human, acme, rated, acmeText, ratedText] = await Promise.all([
      runCli([...db, 'runs', '--json']),
      runCli([...db, 'runs']),
      runCli([...db, 'inspect', 'acme-2', '--json']),
      runCli([...db, 'inspect', 'rated-2', '--json']),
      runCli([...db, 'inspect', 'acme-2']),
      runCli([...db, 'inspect', 'rated-2']),
    ]);
    const readBy = Date.now();
    for (const result of [listed, human, acme, rated, acmeText, ratedText]) expect(result.code).toBe(0);
    const byId = Object.fromEntries(
      json(listed).runs.map((r: { id: string; queuedReason: unknown }) => [r.id, r.queuedReason]),
    );
    expect(byId['acme-1']).toBeNull();
    expect(byId['acme-2']).toEqual(CONCURRENCY);
    expectRateReason(byId['rated-2'], readBy);
    expect(json(acme).run.queuedReason).toEqual(CONCURRENCY);
    expectRateReason(json(rated).run.queuedReason, readBy);

    const row = (id: string) => human.stdout.split('\n').find((line) => line.startsWith(`${id} `));
    expect(row('acme-2')).toMatch(/ queued: 1 of 1 runs for key acme are running$/);
    expect(acmeText.stdout).toMatch(/^queued\s+1 of 1 runs for key acme are running$/m);
    for (const shown of [row('rated-2')?.replace(/^.* queued: /, ''), /^queued\s+(.*)$/m.exec(ratedText.stdout)?.[1]]) {
      // The text rounds to a tenth: within 0.05 of the bounds the JSON is held to.
      const next = Number(RATE.exec(shown ?? '')?.[1]);
      expect(next).toBeLessThanOrEqual(60.05);
      expect(next).toBeGreaterThanOrEqual(60 - (readBy - startedBy) / 1000 - 0.05);
    }
  });
});
