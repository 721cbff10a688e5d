/**
 * `waybill prune` as a real process on a SQLite file whose old rows were written through a store whose
 * clock stood 40 days back: bad flags exit 2 with one line and write nothing; a dry run counts, a prune
 * removes exactly those rows, a second removes none; outside clients' runs only with --include-external.
 */
import { describe, expect, it } from 'vitest';
import { runAgent } from '../../lib/checkpoint/agent';
import { Checkpoint } from '../../lib/checkpoint/checkpoint';
import { ManualClock } from '../../lib/clock';
import { openSqliteStore } from '../../lib/store/sqlite';
import { type Db, freshDb, json } from './support';

const DAY_MS = 86_400_000;

async function seed(db: Db): Promise<void> {
  const clock = new ManualClock(Date.now() - 40 * DAY_MS);
  const store = openSqliteStore({ path: db.url.slice('file:'.length), clock, synchronous: 'normal' });
  try {
    await store.createRun({ id: 'old', workflow: 'w', inputJson: '{}', totalSteps: 3 });
    await store.claimRun({ workerId: 'wk', leaseMs: 60_000, workflows: ['w'] });
    await runAgent([0, 1, 2], new Checkpoint(store, 'old', { workerId: 'wk' }), (x) => x);
    await store.finishRun('old', 'wk', { status: 'completed' });
    await runAgent([0, 1], new Checkpoint(store, 'ext'), (x) => x);
    clock.advance(39 * DAY_MS);
    await store.createRun({ id: 'new', workflow: 'w', inputJson: '{}', totalSteps: 1 });
    await store.claimRun({ workerId: 'wk', leaseMs: 60_000, workflows: ['w'] });
    await runAgent([0], new Checkpoint(store, 'new', { workerId: 'wk' }), (x) => x);
    await store.finishRun('new', 'wk', { status: 'completed' });
  } finally {
    await store.close();
  }
}

describe('waybill prune', () => {
  it('refuses bad flags with exit 2 and one line, writing nothing', async () => {
    const db = await freshDb();
    await seed(db);
    const before = db.dump();
    const cases: [string[], string][] = [
      [['prune'], 'waybill prune: missing --older-than DURATION (e.g. 30d)\n'],
      [
        ['prune', '--older-than', '30'],
        'waybill prune: --older-than: must be a whole number and a unit: s, m, h, d or w (e.g. 30d)\n',
      ],
      [['prune', '--older-than', '0d'], 'waybill prune: --older-than: must be more than 0\n'],
      [
        ['prune', '--older-than', '12h'],
        'waybill prune: --older-than: 12h is under 24h, and a pruned idempotency key can no longer deduplicate a retry (--force to prune anyway)\n',
      ],
      [
        ['prune', '--older-than', '30d', '--batch-size', '0'],
        'waybill prune: --batch-size: must be a whole number, 1-100000\n',
      ],
      [['prune', '--older-than', '30d', '--everything'], "waybill prune: Unknown option '--everything'\n"],
    ];
    for (const [args, stderr] of cases) {
      const result = await db.cli(args);
      expect({ args, code: result.code, stderr: result.stderr, stdout: result.stdout }).toEqual({
        args,
        code: 2,
        stderr,
        stdout: '',
      });
    }
    expect(db.dump()).toEqual(before);
  });

  it('counts on --dry-run, removes exactly the old finished run, then nothing; outside runs only when asked', async () => {
    const db = await freshDb();
    await seed(db);
    const untouched = db.dump();
    const zero = { runs: 0, external: 0, committed: 0, events: 0, progress: 0 };

    expect(json(await db.cli(['prune', '--older-than', '30d', '--dry-run', '--json']))).toMatchObject({
      dryRun: true,
      olderThan: '30d',
      includeExternal: false,
      runs: 1,
      external: 0,
      committed: 3,
      events: 0,
      progress: 1,
    });
    expect(db.dump()).toEqual(untouched);

    expect(json(await db.cli(['prune', '--older-than', '30d', '--json']))).toMatchObject({
      dryRun: false,
      interrupted: false,
      runs: 1,
      external: 0,
      committed: 3,
      events: 0,
      progress: 1,
    });
    const left = db.raw((c) =>
      c.prepare('SELECT run_id AS run, count(*) AS n FROM committed GROUP BY run_id ORDER BY run_id').all(),
    );
    expect(left).toEqual([
      { run: 'ext', n: 2 },
      { run: 'new', n: 1 },
    ]);
    expect(json(await db.cli(['prune', '--older-than', '30d', '--json']))).toMatchObject(zero);

    const external = await db.cli(['prune', '--older-than', '30d', '--include-external']);
    expect(external).toEqual({
      code: 0,
      stderr: '',
      stdout:
        'pruned 0 finished run(s) and 1 outside client run(s) older than 30d: 2 committed, 0 events, 1 progress rows\n',
    });
    expect(json(await db.cli(['prune', '--older-than', '30d', '--include-external', '--json']))).toMatchObject(zero);

    // Under 24h only with --force: the run finished a day ago goes too.
    expect(json(await db.cli(['prune', '--older-than', '1h', '--force', '--json']))).toMatchObject({
      runs: 1,
      committed: 1,
      progress: 1,
    });
    expect(db.raw((c) => c.prepare('SELECT count(*) AS n FROM runs').get())).toEqual({ n: 0 });
  });
});
