/**
 * Operator actions on runs: each legal transition, each refused one (exit 1 with the reason), an unknown
 * run (exit 1, "not found"), and the `operator` events they leave in the run's timeline.
 */
import { describe, expect, it } from 'vitest';
import { freshDb, insertOutsideRun, json } from './support';

describe('waybill pause, resume, cancel and retry', () => {
  it('moves a run through its states and refuses what its state does not allow', async () => {
    const db = await freshDb();
    const input = JSON.stringify({ count: 2, outbox: 'outbox.jsonl' });
    await db.cli(['start', 'notify', '--input', input, '--id', 'r1']);
    insertOutsideRun(db, 'ext-1', { claimAgeS: 5 });

    const steps: [string[], number, RegExp][] = [
      [['pause', 'r1'], 0, /^paused r1: it is paused\n$/],
      [['pause', 'r1'], 1, /^waybill pause: cannot pause run r1: it is paused\n$/],
      [['retry', 'r1'], 1, /^waybill retry: cannot retry run r1: it is paused\n$/],
      [['resume', 'r1'], 0, /^resumed r1: it is queued\n$/],
      [['resume', 'r1'], 1, /^waybill resume: cannot resume run r1: it is queued\n$/],
      [['retry', 'r1'], 1, /^waybill retry: cannot retry run r1: it is queued\n$/],
      [['cancel', 'r1'], 0, /^cancelled r1: it is cancelled\n$/],
      [['pause', 'r1'], 1, /^waybill pause: cannot pause run r1: it is cancelled\n$/],
      [['cancel', 'r1'], 1, /^waybill cancel: cannot cancel run r1: it is cancelled\n$/],
      [['retry', 'r1', '--json'], 0, /^\{"id":"r1",.*"status":"queued"/],
      [['pause', 'nope'], 1, /^waybill pause: run nope not found\n$/],
      // An outside client's run has no runs row: there is no status to move.
      [['cancel', 'ext-1'], 1, /^waybill cancel: run ext-1 not found\n$/],
    ];
    for (const [args, code, output] of steps) {
      const result = await db.cli(args);
      expect(result.code, `${args.join(' ')}: ${result.stderr}`).toBe(code);
      expect(code === 0 ? result.stdout : result.stderr, args.join(' ')).toMatch(output);
      expect(code === 0 ? result.stderr : result.stdout, args.join(' ')).toBe('');
    }

    const detail = json(await db.cli(['inspect', 'r1', '--json']));
    expect(detail.run).toMatchObject({ status: 'queued', error: null, finishedAt: null });
    // The start is in the timeline as the dashboard's and the API's are (the CLI's start used to leave none).
    expect(
      detail.events.map((e: { outcome: string; detail: string }) => [
        e.outcome,
        e.detail.replace(/ by \S+:/, ' by ACTOR:').replace(/^started by \S+$/, 'started by ACTOR'),
      ]),
    ).toEqual([
      ['operator', 'started by ACTOR'],
      ['operator', 'pause by ACTOR: queued → paused'],
      ['operator', 'resume by ACTOR: paused → queued'],
      ['operator', 'cancel by ACTOR: queued → cancelled'],
      ['operator', 'retry by ACTOR: cancelled → queued'],
    ]);
    expect(detail.events[1].detail).toMatch(/^pause by cli(:\S+)?:/);
  });
});

describe('--reason on cancel, expire and sweep', () => {
  const auditRows = (db: Awaited<ReturnType<typeof freshDb>>) =>
    db.raw((conn) =>
      conn.prepare('SELECT actor, role, action, target, run_id AS runId, detail FROM audit ORDER BY id').all(),
    );

  it('keeps the reason in the audit log, with the CLI as a local actor', async () => {
    const db = await freshDb();
    await db.cli(['start', 'notify', '--input', JSON.stringify({ count: 2, outbox: 'outbox.jsonl' }), '--id', 'r1']);
    insertOutsideRun(db, 'ext-1', { claimAgeS: 120 });
    insertOutsideRun(db, 'ext-2', { claimAgeS: 120 });

    expect((await db.cli(['cancel', 'r1', '--reason', '  started with the wrong input  '])).code).toBe(0);
    expect((await db.cli(['expire', 'ext-1:step:2', '--reason', 'the provider never got it'])).code).toBe(0);
    expect((await db.cli(['sweep', '--reason', 'host lost'])).code).toBe(0);
    const rows = auditRows(db) as {
      actor: string;
      role: string;
      action: string;
      target: string;
      runId: string | null;
      detail: string | null;
    }[];
    expect(
      rows.map(({ actor, ...rest }) => {
        expect(actor).toMatch(/^cli(:\S+)?$/);
        return rest;
      }),
    ).toEqual([
      // The CLI's start is audited like the dashboard's (it used to be missing from /audit).
      { role: 'local', action: 'start', target: 'r1', runId: 'r1', detail: 'workflow notify' },
      { role: 'local', action: 'cancel', target: 'r1', runId: 'r1', detail: 'reason: started with the wrong input' },
      {
        role: 'local',
        action: 'expire',
        target: 'ext-1:step:2',
        runId: 'ext-1',
        detail: 'reason: the provider never got it',
      },
      {
        role: 'local',
        action: 'sweep',
        target: '*',
        runId: null,
        detail: 'expired 1 orphaned claim(s): ext-2:step:2; reason: host lost',
      },
    ]);
  });

  it('refuses a reason over 500 characters or with control characters, and changes nothing', async () => {
    const db = await freshDb();
    await db.cli(['start', 'notify', '--input', JSON.stringify({ count: 2, outbox: 'outbox.jsonl' }), '--id', 'r1']);
    insertOutsideRun(db, 'ext-1', { claimAgeS: 120 });
    const before = db.dump();
    for (const [args, message] of [
      [['cancel', 'r1', '--reason', 'x'.repeat(501)], /^waybill cancel: --reason: at most 500 characters\n$/],
      [
        ['expire', 'ext-1:step:2', '--reason', 'a\u001b[31mb'],
        /^waybill expire: --reason: must not contain control characters\n$/,
      ],
      [['pause', 'r1', '--reason', 'why'], /^waybill pause: .*reason/],
    ] as [string[], RegExp][]) {
      const result = await db.cli(args);
      expect(result.code, args.join(' ')).toBe(2);
      expect(result.stderr).toMatch(message);
    }
    expect(db.dump()).toEqual(before);
  });
});
