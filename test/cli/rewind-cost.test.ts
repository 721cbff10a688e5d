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
});
