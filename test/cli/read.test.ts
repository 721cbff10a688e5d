/**
 * The read commands' JSON shapes, and an outside client's run (the article's Python class writing the
 * tables directly) as the CLI lists, shows, expires and resolves it.
 */
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { freshDb, insertOutsideRun, json } from './support';

// The API's views (lib/control/views): runs and claims --json print what GET /api/v1/runs and /claims answer.
const RUN_KEYS = [
  'awaited',
  'committed',
  'createdAt',
  'error',
  'executed',
  'figures',
  'id',
  'metadata',
  'orphanedClaims',
  'owner',
  'queuedReason',
  'skipped',
  'stall',
  'status',
  'step',
  'tags',
  'totalSteps',
  'updatedAt',
  'workflow',
];
const CLAIM_KEYS = [
  'attempt',
  'claimedAt',
  'expiresAt',
  'heartbeatAt',
  'key',
  'leaseExpiresAt',
  'orphaned',
  'outsideClient',
  'runId',
  'step',
  'workerId',
];

describe('waybill read commands', () => {
  it('start, runs, inspect and claims print one JSON document each, in the documented shapes', async () => {
    const db = await freshDb();
    const inputFile = join(db.dir, 'input.json');
    writeFileSync(inputFile, JSON.stringify({ count: 3, outbox: 'outbox.jsonl' }));

    const started = json(await db.cli(['start', 'notify', '--input', `@${inputFile}`, '--id', 'r1', '--json']));
    expect(started).toMatchObject({ id: 'r1', workflow: 'notify', status: 'queued', totalSteps: 3 });
    const auto = json(await db.cli(['start', 'agent-batch', '--input', '{"count":4,"latencyMs":0}', '--json']));
    expect(auto.id).toMatch(/^agent-batch-\d{4}-\d{2}-\d{2}-[0-9a-f]{8}$/);

    const [list, queued, notify, searched, limited] = await Promise.all([
      db.cli(['runs', '--json']),
      db.cli(['--json', 'runs', '--status', 'queued']), // global flags before the command too
      db.cli(['runs', '--workflow', 'notify', '--json']),
      db.cli(['runs', '--search', 'batch', '--json']),
      db.cli(['runs', '--limit', '1', '--json']),
    ]);
    const { runs } = json<{ runs: Record<string, unknown>[] }>(list);
    expect(runs).toHaveLength(2);
    for (const run of runs) expect(Object.keys(run).sort()).toEqual(RUN_KEYS);
    expect(runs.find((r) => r.id === 'r1')).toMatchObject({
      workflow: 'notify',
      status: 'queued',
      step: 0,
      totalSteps: 3,
      executed: 0,
      skipped: 0,
      awaited: 0,
      orphanedClaims: 0,
    });
    expect(json(queued).runs).toHaveLength(2);
    expect(json(notify).runs.map((r: { id: string }) => r.id)).toEqual(['r1']);
    expect(json(searched).runs.map((r: { id: string }) => r.id)).toEqual([auto.id]);
    expect(json(limited)).toEqual({ runs: [expect.objectContaining({})], nextCursor: expect.any(String) });

    const [detail, claims, human] = await Promise.all([
      db.cli(['inspect', 'r1', '--json']),
      db.cli(['claims', '--json']),
      db.cli(['runs']),
    ]);
    const shown = json(detail);
    expect(Object.keys(shown).sort()).toEqual([
      'claims',
      'claimsNextCursor',
      'committed',
      'events',
      'figures',
      'progress',
      'run',
    ]);
    expect(shown).toMatchObject({
      run: { id: 'r1', workflow: 'notify', status: 'queued', totalSteps: 3 },
      progress: { step: 0, state: null },
      claims: [],
      committed: 0,
    });
    // The CLI's start is in the timeline, as the dashboard's and the API's are (it used to leave no event).
    expect(shown.events).toEqual([
      expect.objectContaining({ outcome: 'operator', detail: expect.stringMatching(/^started by cli(:\S+)?$/) }),
    ]);
    expect(json(claims)).toEqual({ claims: [], nextCursor: null });
    expect(human.stdout.split('\n')[0]).toMatch(/^ID\s+WORKFLOW\s+STATUS\s+PROGRESS/);
    expect(human.stdout).toMatch(/r1\s+notify\s+queued\s+\[░+\] 0\/3/);
    expect(human.stdout).toMatch(/\d+s ago|now/);

    // DATABASE_URL named another file; --db won.
    expect(existsSync(join(db.dir, 'env.db'))).toBe(false);
  });

  it("lists and shows an outside client's run, and expires its orphaned claim", async () => {
    const db = await freshDb();
    insertOutsideRun(db, 'ext-1', { claimAgeS: 3600 });
    // Claimed "in an hour": live whatever the test's pace (a claim 1 s old turned orphaned on a loaded machine).
    insertOutsideRun(db, 'ext-fresh', { claimAgeS: -3600 });

    const { runs } = json<{ runs: Record<string, unknown>[] }>(
      await db.cli(['runs', '--workflow', 'external', '--json']),
    );
    expect(runs.map((r) => r.id).sort()).toEqual(['ext-1', 'ext-fresh']);
    expect(runs.find((r) => r.id === 'ext-1')).toMatchObject({
      workflow: 'external',
      status: 'running',
      step: 2,
      totalSteps: null,
      orphanedClaims: 1,
    });
    expect(runs.find((r) => r.id === 'ext-fresh')).toMatchObject({ orphanedClaims: 0 });

    const [detail, orphaned, all, human] = await Promise.all([
      db.cli(['inspect', 'ext-1', '--json']),
      db.cli(['claims', '--orphaned', '--json']),
      db.cli(['claims', '--json']),
      db.cli(['inspect', 'ext-1']),
    ]);
    expect(json(detail)).toMatchObject({
      run: { id: 'ext-1', workflow: 'external', status: 'running', totalSteps: null },
      progress: { step: 2, state: { done: 2 } },
      claims: [{ key: 'ext-1:step:2', workerId: null, leaseExpiresAt: null, orphaned: true }],
      committed: 2,
    });
    const orphans = json<{ claims: Record<string, unknown>[] }>(orphaned).claims;
    expect(orphans).toHaveLength(1);
    expect(Object.keys(orphans[0]!).sort()).toEqual(CLAIM_KEYS);
    expect(orphans[0]).toMatchObject({ key: 'ext-1:step:2', runId: 'ext-1', workerId: null, orphaned: true });
    expect(json(all).claims).toHaveLength(2);
    expect(human.stdout).toMatch(/ext-1:step:2\s+—\s+1h ago\s+—\s+ORPHANED/);

    // Expiring deletes the claim row: any client, the article's included, can claim the key again.
    const expired = await db.cli(['expire', 'ext-1:step:2']);
    expect(expired).toMatchObject({ code: 0, stderr: '' });
    expect(expired.stdout).toContain('expired ext-1:step:2');
    const after = json(await db.cli(['inspect', 'ext-1', '--json']));
    expect(after.claims).toEqual([]);
    expect(after.run.status).toBe('idle');
    expect(after.events).toEqual([
      expect.objectContaining({ outcome: 'expired', key: 'ext-1:step:2', detail: expect.stringContaining('cli') }),
    ]);

    // A live claim is refused without --force.
    const refused = await db.cli(['expire', 'ext-fresh:step:2']);
    expect(refused.code).toBe(1);
    expect(refused.stderr.trim().split('\n')).toHaveLength(1);
    expect(refused.stderr).toContain('--force');
    expect(json(await db.cli(['claims', '--json'])).claims).toHaveLength(1);
    expect(await db.cli(['expire', 'ext-fresh:step:2', '--force'])).toMatchObject({ code: 0 });
    expect(json(await db.cli(['claims', '--json']))).toEqual({ claims: [], nextCursor: null });
  });

  it('inspect says "never" for a run no row has given a time, and the progress time for a run row', async () => {
    const db = await freshDb();
    // An outside client's claim written with claimed_at 0: there is no time to show, not 1970-01-01.
    db.raw((conn) =>
      conn.prepare('INSERT INTO claims(idem_key, run_id, claimed_at) VALUES (?, ?, ?)').run('t0:step:0', 't0', 0),
    );
    const human = await db.cli(['inspect', 't0']);
    expect(human.code, human.stderr).toBe(0);
    expect(human.stdout).toMatch(/^updated\s+never$/m);
    expect(human.stdout).not.toMatch(/\d{4,}d ago/);
    expect(json(await db.cli(['inspect', 't0', '--json'])).run.updatedAt).toBeNull();

    // A run row last touched an hour ago whose progress was saved just now: updated is the progress's time.
    await db.cli(['start', 'notify', '--input', JSON.stringify({ count: 3, outbox: 'outbox.jsonl' }), '--id', 'r2']);
    const now = Date.now() / 1000;
    db.raw((conn) => {
      conn.prepare('UPDATE runs SET updated_at = ? WHERE id = ?').run(now - 3600, 'r2');
      conn
        .prepare('INSERT INTO progress(run_id, step, state_json, updated_at) VALUES (?, ?, ?, ?)')
        .run('r2', 1, '{}', now - 2);
    });
    const shown = await db.cli(['inspect', 'r2']);
    expect(shown.stdout).toMatch(/^updated\s+(\d+s ago|now)$/m);
  });

  it('resolves a claim by hand, and sweeps the rest of the orphaned ones', async () => {
    const db = await freshDb();
    insertOutsideRun(db, 'ext-a', { claimAgeS: 600 });
    insertOutsideRun(db, 'ext-b', { claimAgeS: 600 });
    insertOutsideRun(db, 'ext-c', { claimAgeS: 600 });
    // Claimed "in an hour", as above: a claim 1 s old passed its 30 s TTL here while the machine built Next.
    insertOutsideRun(db, 'ext-live', { claimAgeS: -3600 });

    const resolved = await db.cli([
      'resolve',
      'ext-a:step:2',
      '--result',
      '{"sent": true}',
      '--note',
      'checked the mail log',
    ]);
    expect(resolved).toMatchObject({ code: 0, stderr: '' });
    const row = db.raw((c) =>
      c.prepare("SELECT result_json, source FROM committed WHERE idem_key = 'ext-a:step:2'").get(),
    );
    expect(row).toEqual({ result_json: '{"sent":true}', source: 'manual' });
    const events = json(await db.cli(['inspect', 'ext-a', '--json'])).events;
    expect(events).toEqual([
      expect.objectContaining({
        outcome: 'resolved',
        detail: expect.stringMatching(/^resolved by cli(:\S+)?: checked the mail log$/),
      }),
    ]);

    const again = await db.cli(['resolve', 'ext-a:step:2', '--result', '1']);
    expect(again.code).toBe(1);
    expect(again.stderr).toBe('waybill resolve: claim on ext-a:step:2 not found\n');

    // A claim whose TTL has not passed is refused in one line, and nothing is written.
    const live = await db.cli(['resolve', 'ext-live:step:2', '--result', '{"sent": true}']);
    expect(live).toMatchObject({
      code: 1,
      stdout: '',
      stderr: 'waybill resolve: ext-live:step:2: not resolved (its lease is live: --force resolves a live claim)\n',
    });
    expect(
      db.raw((c) => c.prepare("SELECT count(*) AS n FROM committed WHERE idem_key = 'ext-live:step:2'").get()),
    ).toEqual({ n: 0 });
    expect(json(await db.cli(['inspect', 'ext-live', '--json'])).events).toEqual([]);

    const swept = json(await db.cli(['sweep', '--json']));
    // The API's sweep answer (lib/control/views sweepView): a count, the keys, and what was left alone.
    expect(swept).toEqual({ expired: 2, keys: ['ext-b:step:2', 'ext-c:step:2'], skipped: [] });
    expect(json(await db.cli(['claims', '--json'])).claims.map((c: { key: string }) => c.key)).toEqual([
      'ext-live:step:2',
    ]);
    const human = await db.cli(['sweep']);
    expect(human).toMatchObject({ code: 0, stdout: 'no orphaned claims\n' });

    insertOutsideRun(db, 'ext-d', { claimAgeS: 600 });
    const all = await db.cli(['expire', '--all-orphaned']);
    expect(all).toMatchObject({ code: 0, stdout: 'expired 1 of 1 orphaned claim(s)\n' });
  });
});
