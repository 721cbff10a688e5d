/**
 * `waybill <action> --all-matching` as a real process on a real SQLite file: without --yes it only counts
 * (exit 2, nothing written); with it, exactly the matching runs move, one audit line each; bad flags name
 * themselves and write nothing. And `waybill runs` names a queued run no live worker serves.
 */
import { describe, expect, it } from 'vitest';
import { freshDb, json } from './support';

describe('waybill --all-matching', () => {
  it('acts on the runs with every --tag and --meta, and names a bad one', async () => {
    const db = await freshDb();
    db.raw((conn) => {
      const now = Date.now() / 1000;
      const insert = conn.prepare(`INSERT INTO runs (id, workflow, input_json, status, attempts, created_at, updated_at)
        VALUES (?, 'notify', '{}', 'queued', 0, ?, ?)`);
      for (const id of ['a', 'b', 'c']) insert.run(id, now, now);
      const tag = conn.prepare('INSERT INTO run_tags (run_id, tag) VALUES (?, ?)');
      for (const [id, t] of [
        ['a', 'red'],
        ['a', 'big'],
        ['b', 'red'],
        ['c', 'big'],
      ])
        tag.run(id, t);
      conn.prepare(`INSERT INTO run_metadata (run_id, key, value) VALUES ('a', 'k', 'v'), ('c', 'k', 'v')`).run();
    });
    const before = db.dump();
    const asked = await db.cli(['cancel', '--all-matching', '--tag', 'big', '--meta', 'k=v']);
    expect([asked.code, asked.stderr.trim()]).toEqual([
      2,
      'waybill cancel: 2 runs match (tag=big meta="k=v"); cancel applies to 2 of them. Nothing changed: add --yes to cancel them.',
    ]);
    expect(json(await db.cli(['cancel', '--all-matching', '--tag', 'red', '--tag', 'big', '--yes', '--json']))).toEqual(
      {
        matched: 1,
        done: 1,
        skipped: [],
      },
    );
    const { runs } = json<{ runs: { id: string; status: string }[] }>(await db.cli(['runs', '--json']));
    expect(runs.map((r) => `${r.id} ${r.status}`).sort()).toEqual(['a cancelled', 'b queued', 'c queued']);
    const after = db.dump();
    const bad = await db.cli(['cancel', '--all-matching', '--tag', 'ok', '--tag', 'not ok', '--yes']);
    expect([bad.code, bad.stderr.trim()]).toEqual([
      2,
      'waybill cancel: --tag: letters, digits and . _ : / @ - only, starting with a letter or digit',
    ]);
    expect((await db.cli(['pause', '--all-matching', '--meta', 'k', '--yes'])).stderr.trim()).toBe(
      'waybill pause: --meta: must be key=value',
    );
    expect(db.dump()).toEqual(after);
    expect(before.runs).toHaveLength(3);
  });

  it('counts first, then acts on exactly the runs the filters match, audited per run', async () => {
    const db = await freshDb();
    db.raw((conn) => {
      const insert = conn.prepare(`INSERT INTO runs (id, workflow, input_json, status, attempts, created_at, updated_at)
        VALUES (?, ?, '{}', 'queued', 0, ?, ?)`);
      const now = Date.now() / 1000;
      for (let i = 0; i < 12; i++) insert.run(`n-${i}`, 'notify', now, now);
      for (let i = 0; i < 3; i++) insert.run(`a-${i}`, 'agent-batch', now, now);
    });
    const before = db.dump();

    const asked = await db.cli(['pause', '--all-matching', '--workflow', 'notify']);
    expect([asked.code, asked.stdout, asked.stderr.trim()]).toEqual([
      2,
      '',
      'waybill pause: 12 runs match (workflow=notify); pause applies to 12 of them. Nothing changed: add --yes to pause them.',
    ]);
    expect(db.dump()).toEqual(before);

    const report = json(
      await db.cli([
        'pause',
        '--all-matching',
        '--workflow',
        'notify',
        '--reason',
        'maintenance',
        '--yes',
        '--json',
        '--as',
        'ann',
      ]),
    );
    expect(report).toEqual({ matched: 12, done: 12, skipped: [] });
    const { runs } = json<{ runs: { id: string; status: string }[] }>(
      await db.cli(['runs', '--json', '--limit', '100']),
    );
    expect(
      runs
        .filter((r) => r.status === 'paused')
        .map((r) => r.id)
        .sort(),
    ).toEqual(Array.from({ length: 12 }, (_, i) => `n-${i}`).sort());
    expect(runs.filter((r) => r.status === 'queued').length).toBe(3);
    const audit = json<{ entries: { action: string; actor: string; detail: string }[] }>(
      await db.cli(['audit', '--json', '--limit', '100']),
    ).entries;
    expect(audit.length).toBe(12);
    expect(new Set(audit.map((a) => `${a.action} ${a.actor} ${a.detail}`))).toEqual(
      new Set(['pause ann bulk pause of runs matching workflow=notify; reason: maintenance']),
    );

    // Resume over every run: the 3 queued ones are skipped, with why.
    const human = await db.cli(['resume', '--all-matching', '--yes']);
    expect(human.code).toBe(0);
    expect(human.stdout.split('\n')[0]).toBe('resume: 15 matched, 12 done, 3 skipped');
    expect(human.stdout).toContain('skipped a-0: is queued: resume applies to paused runs');
  });

  it('rerun --all-matching --from-step N|NAME: counts first, then reruns the runs it applies to and lists the rest', async () => {
    const db = await freshDb();
    db.raw((conn) => {
      const now = Date.now() / 1000;
      const run =
        conn.prepare(`INSERT INTO runs (id, workflow, input_json, status, total_steps, attempts, created_at, updated_at)
        VALUES (?, 'notify', '{}', ?, ?, 1, ?, ?)`);
      const step = conn.prepare(`INSERT INTO committed (idem_key, run_id, result_json, committed_at, step, source)
        VALUES (?, ?, '1', ?, ?, 'executed')`);
      for (const [id, status, count] of [
        ['c-0', 'completed', 4],
        ['c-1', 'failed', 4],
        ['c-2', 'completed', 2],
        ['c-3', 'running', 4],
      ] as const) {
        run.run(id, status, count, now, now);
        for (let n = 0; n < count; n++) step.run(`${id}:step:${n}`, id, now, n);
      }
    });
    const before = db.dump();
    const asked = await db.cli(['rerun', '--all-matching', '--workflow', 'notify', '--from-step', '3']);
    expect([asked.code, asked.stdout, asked.stderr.trim()]).toEqual([
      2,
      '',
      'waybill rerun: 4 runs match (workflow=notify); rerun from step 3 applies to 2 of them. Nothing changed: add --yes to rerun them.',
    ]);
    expect(db.dump()).toEqual(before);

    const human = await db.cli([
      'rerun',
      '--all-matching',
      '--workflow',
      'notify',
      '--from-step',
      '3',
      '--yes',
      '--as',
      'ann',
    ]);
    expect([human.code, human.stderr]).toEqual([0, '']);
    const [summary, ...skipped] = human.stdout.trim().split('\n');
    expect(summary).toBe('rerun: 4 matched, 2 done, 2 skipped');
    expect(skipped.sort()).toEqual([
      '  skipped c-2: step 3 is beyond its last step (1)',
      '  skipped c-3: is running: rerun applies to completed, failed, cancelled, paused runs (pause it first)',
    ]);
    const audit = json<{ entries: { action: string; target: string; detail: string }[] }>(
      await db.cli(['audit', '--json', '--limit', '100']),
    ).entries;
    expect(audit.map((a) => [a.action, a.target]).sort()).toEqual([
      ['rerun', 'c-0'],
      ['rerun', 'c-1'],
    ]);
    expect(audit[0]!.detail).toMatch(
      /^bulk rerun from step 3 of runs matching workflow=notify: rerun 1 from step 3: 1 results moved to history/,
    );

    // By name, as JSON: `step:1` is runAgent's key tail; the running run is skipped again.
    db.raw((conn) => conn.prepare(`UPDATE runs SET status = 'completed' WHERE id IN ('c-0', 'c-1')`).run());
    const byName = json<{ matched: number; done: number; skipped: { id: string; reason: string }[] }>(
      await db.cli(['rerun', '--all-matching', '--workflow', 'notify', '--from-step', 'step:1', '--yes', '--json']),
    );
    expect([byName.matched, byName.done, byName.skipped.map((s) => s.id).sort()]).toEqual([4, 3, ['c-3']]);

    // Bad flags name themselves and change nothing.
    const now = db.dump();
    for (const [args, message] of [
      [['rerun', '--all-matching', '--yes'], 'waybill rerun: --from-step: must be a step number or a step name'],
      [['rerun', '--all-matching', '--from-step=-2', '--yes'], 'waybill rerun: --from-step: must be a whole number'],
      [['pause', '--all-matching', '--from-step', '2', '--yes'], 'waybill pause: --from-step: only rerun takes a step'],
      [
        ['rerun', '--all-matching', '--status', 'stuck', '--from-step', '1', '--yes'],
        'waybill rerun: --status: must be one of',
      ],
    ] as [string[], string][]) {
      const result = await db.cli(args);
      expect([result.code, result.stdout, result.stderr.trim().startsWith(message)], args.join(' ')).toEqual([
        2,
        '',
        true,
      ]);
    }
    expect(db.dump()).toEqual(now);
  });

  it('refuses bad flags naming them, and writes nothing', async () => {
    const db = await freshDb();
    db.raw((conn) =>
      conn
        .prepare(`INSERT INTO runs (id, workflow, input_json, status, attempts, created_at, updated_at)
      VALUES ('r1', 'notify', '{}', 'queued', 0, 1, 1)`)
        .run(),
    );
    const before = db.dump();
    const cases: [string[], string][] = [
      [
        ['cancel', '--all-matching', '--status', 'stuck', '--yes'],
        'waybill cancel: --status: must be one of queued, running, paused, waiting, completed, failed, cancelled, rejected, idle',
      ],
      [
        ['cancel', '--all-matching', '--workflow', 'Bad Name', '--yes'],
        'waybill cancel: --workflow: must be a workflow name (lowercase letters, digits, dashes)',
      ],
      [
        ['cancel', '--all-matching', '--search', 'x'.repeat(201)],
        'waybill cancel: --search: must be at most 200 characters',
      ],
      [
        ['cancel', '--all-matching', '--reason', 'r'.repeat(501), '--yes'],
        'waybill cancel: --reason: at most 500 characters',
      ],
      [
        ['cancel', '--all-matching', 'r1', '--yes'],
        'waybill cancel: --all-matching acts on the runs the filters match: unexpected run id "r1"',
      ],
      [['cancel', '--all-matching', '--colour', 'red'], "waybill cancel: Unknown option '--colour'"],
    ];
    for (const [args, message] of cases) {
      const result = await db.cli(args);
      expect([result.code, result.stdout, result.stderr.trim()], args.join(' ')).toEqual([2, '', message]);
    }
    expect(db.dump()).toEqual(before);
  });

  it('runs shows a queued run no live worker serves as stalled, in its STATE column and --json', async () => {
    const db = await freshDb();
    expect(json(await db.cli(['start', 'agent-batch', '--input', '{"count":2}', '--id', 'lonely', '--json'])).id).toBe(
      'lonely',
    );
    const [listed, human] = await Promise.all([db.cli(['runs', '--json']), db.cli(['runs'])]);
    expect(json(listed).runs[0].stall).toEqual({
      kind: 'no-live-worker',
      workflow: 'agent-batch',
      message: 'no live worker for agent-batch',
    });
    const [header, row] = human.stdout.trim().split('\n');
    expect(header).toMatch(/ STATE$/);
    expect(row).toMatch(/^lonely .* stalled: no live worker for agent-batch$/);
    expect(human.stderr).toBe('1 of these runs is stalled: see STATE\n');
  });
});
