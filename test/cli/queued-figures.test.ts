/**
 * `waybill runs` and `waybill inspect`, as real processes: a queued run says what it waits for (a free slot,
 * naming the worker and the run that holds it), and a completed run of named steps (no map saved) shows the
 * figures every other view shows: 2/2, 100%, executed 2.
 */
import { describe, expect, it } from 'vitest';
import { type Db, freshDb, json } from './support';

const BUSY = 'waiting for a free slot: 1 of 1 busy on worker w-1 with run held';

/** A live worker of one slot that published agent-batch, running `held`; beating "in an hour", live whatever the pace. */
function oneBusyWorker(db: Db) {
  db.raw((conn) => {
    const now = Date.now() / 1000;
    conn
      .prepare(`INSERT INTO workers (id, host, pid, started_at, heartbeat_at, workflows_json, slots)
        VALUES ('w-1', 'h', 1, ?, ?, '["agent-batch"]', 1)`)
      .run(now, now + 3600);
    conn
      .prepare(
        `INSERT INTO workflows (name, input_schema_json, published_by, updated_at) VALUES ('agent-batch', '{}', 'w-1', ?)`,
      )
      .run(now);
    conn
      .prepare(`UPDATE runs SET status = 'running', owner = 'w-1', lease_expires_at = ? WHERE id = 'held'`)
      .run(now + 3600);
  });
}

describe('waybill runs and inspect: queued reasons and figures', () => {
  it('a queued run behind a busy worker names the slot, the worker and the run in it', async () => {
    const db = await freshDb();
    for (const id of ['held', 'behind'])
      expect((await db.cli(['start', 'agent-batch', '--input', '{"count":2}', '--id', id])).code).toBe(0);
    oneBusyWorker(db);

    const [listed, human, inspected, shown] = await Promise.all([
      db.cli(['runs', '--json']),
      db.cli(['runs']),
      db.cli(['inspect', 'behind', '--json']),
      db.cli(['inspect', 'behind']),
    ]);
    const reason = {
      kind: 'slots-busy',
      workflow: 'agent-batch',
      busy: 1,
      slots: 1,
      workers: [{ id: 'w-1', slots: 1, runs: ['held'] }],
      message: BUSY,
    };
    expect(
      Object.fromEntries(json(listed).runs.map((r: { id: string; queuedReason: unknown }) => [r.id, r.queuedReason])),
    ).toEqual({ held: null, behind: reason });
    expect(json(inspected).run.queuedReason).toEqual(reason);
    const row = human.stdout.split('\n').find((line) => line.startsWith('behind '));
    expect(row).toMatch(new RegExp(` queued: ${BUSY}$`));
    expect(human.stderr).toBe('');
    expect(shown.stdout).toMatch(new RegExp(`^queued\\s+${BUSY}$`, 'm'));
  });

  it('a completed run of named steps with no map saved is 2/2, 100%, executed 2', async () => {
    const db = await freshDb();
    expect((await db.cli(['runs'])).code).toBe(0); // creates and migrates the store
    db.raw((conn) => {
      const now = Date.now() / 1000;
      conn
        .prepare(`INSERT INTO runs (id, workflow, input_json, status, total_steps, attempts, created_at, updated_at,
          started_at, finished_at) VALUES ('named', 'review-and-send', '{}', 'completed', 2, 1, ?, ?, ?, ?)`)
        .run(now, now, now, now);
      const commit = conn.prepare(
        `INSERT INTO committed (idem_key, run_id, result_json, committed_at) VALUES (?, 'named', '{}', ?)`,
      );
      commit.run('named:draft', now);
      commit.run('named:send', now);
    });
    const [listed, human, inspected, shown] = await Promise.all([
      db.cli(['runs', '--json']),
      db.cli(['runs']),
      db.cli(['inspect', 'named', '--json']),
      db.cli(['inspect', 'named']),
    ]);
    const figures = { done: 2, total: 2, percent: 100, committed: 2, executed: 2, skipped: 0, awaited: 0 };
    expect(json(listed).runs[0].figures).toEqual(figures);
    expect(json(inspected).figures).toEqual(figures);
    const [header, row] = human.stdout.trim().split('\n');
    expect(header).toMatch(/^ID\s+WORKFLOW\s+STATUS\s+PROGRESS\s+EXECUTED\s+SKIPPED/);
    expect(row).toMatch(/^named\s+review-and-send\s+completed\s+\[█{12}\] 2\/2 100%\s+2\s+0\s+0\s/);
    expect(shown.stdout).toMatch(/^progress\s+\[█{24}\] 2\/2 100%$/m);
    expect(shown.stdout).toMatch(/^executed\s+2$/m);
    expect(shown.stdout).toMatch(/^committed\s+2$/m);
  });
});
