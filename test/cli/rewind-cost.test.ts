/**
 * `waybill rerun` and `waybill fork` say what the steps they redo cost last time before they act, and
 * `--dry-run` stops there: it says what would be redone, writes nothing and exits 0. With `--json` the answer
 * carries lastCost (a dry run answers it alone). The real CLI as a process, on a real SQLite file.
 */
import { describe, expect, it } from 'vitest';
import { type Db, freshDb, json } from './support';

/** A completed three-step run whose steps 1 and 2 made a model call each ($0.30 and $0.12, 30.5k tokens each). */
function seed(db: Db) {
  const now = Date.now() / 1000;
  db.raw((conn) => {
    conn
      .prepare(`INSERT INTO runs (id, workflow, input_json, status, total_steps, attempts, created_at, updated_at)
      VALUES ('r1', 'notify', '{"count":3,"outbox":"o.jsonl","latencyMs":0}', 'completed', 3, 1, ?, ?)`)
      .run(now, now);
    for (let n = 0; n < 3; n++) {
      conn
        .prepare(
          `INSERT INTO committed (idem_key, run_id, result_json, committed_at, step, source) VALUES (?, 'r1', '{}', ?, ?, 'executed')`,
        )
        .run(`r1:step:${n}`, now, n);
    }
    for (const [n, cost] of [
      [1, 0.3],
      [2, 0.12],
    ] as const) {
      conn
        .prepare(
          `INSERT INTO model_calls (id, idem_key, sent_key, run_id, step, api, model, fingerprint, state, framing,
            input_tokens, output_tokens, cached_tokens, cost_usd, started_at, completed_at)
          VALUES (?, ?, ?, 'r1', ?, 'openai.chat', 'm', 'f', 'complete', 'json', 30000, 500, 0, ?, ?, ?)`,
        )
        .run(`c${n}`, `r1:step:${n}`, `r1:step:${n}`, n, cost, now, now);
    }
  });
}

/**
 * A completed parent p1 of three steps that started children a and b (notify, one failed) before step 1 and c
 * after it: the `child:` rows a ctx.startChild commits, in commit order, and the children's runs rows.
 */
function seedParent(db: Db) {
  const now = Date.now() / 1000;
  db.raw((conn) => {
    const run = conn.prepare(`INSERT INTO runs (id, workflow, input_json, status, total_steps, attempts, created_at,
      updated_at, parent_run_id) VALUES (?, 'notify', '{"count":1,"outbox":"o.jsonl","latencyMs":0}', ?, ?, 1, ?, ?, ?)`);
    run.run('p1', 'completed', 3, now, now, null);
    for (const [id, status] of [
      ['p1:a', 'completed'],
      ['p1:b', 'failed'],
      ['p1:c', 'completed'],
    ] as const)
      run.run(id, status, 1, now, now, 'p1');
    const commit = conn.prepare(
      `INSERT INTO committed (idem_key, run_id, result_json, committed_at, step, source) VALUES (?, 'p1', ?, ?, ?, 'executed')`,
    );
    const started = (child: string) => JSON.stringify({ runId: `p1:${child}` });
    commit.run('p1:step:0', '{}', now - 6, 0);
    commit.run('p1:child:a', started('a'), now - 5, null);
    commit.run('p1:child:b', started('b'), now - 4, null);
    commit.run('p1:step:1', '{}', now - 3, 1);
    commit.run('p1:child:c', started('c'), now - 2, null);
    commit.run('p1:step:2', '{}', now - 1, 2);
  });
}

describe('waybill rerun and fork: the cost before the rewind', () => {
  it('--dry-run says the cost and what would be redone, changes nothing, exits 0', async () => {
    const db = await freshDb();
    seed(db);
    const before = JSON.stringify(db.dump());
    const rerun = await db.cli(['rerun', 'r1', '--from-step', '1', '--dry-run']);
    expect([rerun.code, rerun.stderr, rerun.stdout]).toEqual([
      0,
      '',
      'steps 1–2 cost $0.42 and 61k tokens last time\n' +
        'dry run: rerun of r1 from step 1 would move the results of steps 1–2 to history and queue the run to run them again; nothing changed\n',
    ]);
    const fork = await db.cli(['fork', 'r1', '--from-step', 'step:2', '--dry-run']);
    expect([fork.code, fork.stderr, fork.stdout]).toEqual([
      0,
      '',
      'step 2 cost $0.12 and 31k tokens last time\n' +
        'dry run: a fork of r1 from step 2 (step:2) would copy steps 0–1 and run step 2 anew as a new run; nothing changed\n',
    ]);
    const none = await db.cli(['fork', 'r1', '--from-step', '0', '--dry-run', '--json']);
    expect(json(none)).toEqual({
      dryRun: true,
      runId: 'r1',
      lastCost: {
        fromStep: 0,
        toStep: 2,
        calls: 2,
        inputTokens: 60_000,
        outputTokens: 1_000,
        cachedTokens: 0,
        tokens: 61_000,
        costUsd: expect.closeTo(0.42, 10),
        unpriced: 0,
        text: 'steps 0–2 cost $0.42 and 61k tokens last time',
      },
    });
    // A dry run is refused as the rewind would be, naming the step, and still writes nothing.
    const beyond = await db.cli(['rerun', 'r1', '--from-step', '3', '--dry-run']);
    expect([beyond.code, beyond.stdout]).toEqual([2, '']);
    expect(beyond.stderr).toContain("fromStep 3 is beyond run r1's last step (2)");
    expect(JSON.stringify(db.dump())).toBe(before);
  });

  it('says the cost first, then rewinds; --json answers lastCost', async () => {
    const db = await freshDb();
    seed(db);
    const fork = await db.cli(['fork', 'r1', '--from-step', '2', '--id', 'r1-b']);
    expect([fork.code, fork.stderr]).toEqual([0, '']);
    expect(fork.stdout).toBe(
      'step 2 cost $0.12 and 31k tokens last time\nforked r1-b from r1 at step 2: 2 results copied; it is queued\n',
    );
    const rerun = json(await db.cli(['rerun', 'r1', '--from-step', '1', '--json']));
    expect(rerun).toMatchObject({ moved: 2, rerun: 1, lastCost: { fromStep: 1, toStep: 2, calls: 2, tokens: 61_000 } });
    expect(rerun.lastCost.text).toBe('steps 1–2 cost $0.42 and 61k tokens last time');
    // The fork has no calls of its own yet.
    const forked = await db.cli(['rerun', 'r1-b', '--from-step', '2', '--dry-run']);
    expect(forked.stdout.split('\n')[0]).toBe('no model calls recorded for step 2');
  });

  it('--dry-run names the child runs the rerun would let go, text and --json, and the rerun lets go those', async () => {
    const db = await freshDb();
    seedParent(db);
    const before = JSON.stringify(db.dump());
    const dry = await db.cli(['rerun', 'p1', '--from-step', '1', '--dry-run']);
    expect([dry.code, dry.stderr, dry.stdout]).toEqual([
      0,
      '',
      'no model calls recorded for steps 1–2\n' +
        'lets go 1 child run: p1:c (notify, completed)\n' +
        'dry run: rerun of p1 from step 1 would move the results of steps 1–2 to history and queue the run to run them again; nothing changed\n',
    ]);
    const all = json(await db.cli(['rerun', 'p1', '--from-step', '0', '--dry-run', '--json']));
    expect(all.letGo).toEqual({
      count: 3,
      children: [
        { runId: 'p1:a', workflow: 'notify', status: 'completed', step: 'child:a' },
        { runId: 'p1:b', workflow: 'notify', status: 'failed', step: 'child:b' },
        { runId: 'p1:c', workflow: 'notify', status: 'completed', step: 'child:c' },
      ],
      text: 'lets go 3 child runs: p1:a (notify, completed), p1:b (notify, failed), p1:c (notify, completed)',
    });
    const preview = json(await db.cli(['rerun', 'p1', '--from-step', '1', '--dry-run', '--json']));
    expect(Object.keys(preview)).toEqual(['dryRun', 'runId', 'lastCost', 'letGo']);
    expect(JSON.stringify(db.dump())).toBe(before);

    const rerun = await db.cli(['rerun', 'p1', '--from-step', '1']);
    expect([rerun.code, rerun.stderr]).toEqual([0, '']);
    const parents = db.raw(
      (conn) =>
        conn
          .prepare("SELECT id, parent_run_id AS parent, detached FROM runs WHERE id LIKE 'p1:%' ORDER BY id")
          .all() as { id: string; parent: string | null; detached: number }[],
    );
    const letGo = parents.filter((r) => r.parent === null && r.detached === 1).map((r) => r.id);
    expect(letGo).toEqual(preview.letGo.children.map((c: { runId: string }) => c.runId));
    expect(parents.filter((r) => r.parent === 'p1').map((r) => r.id)).toEqual(['p1:a', 'p1:b']);
  });
});
