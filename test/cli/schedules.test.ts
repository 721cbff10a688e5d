/**
 * `waybill schedule add|pause|resume|delete` and `waybill schedules`: each change audited, a bad cron
 * expression, time zone, policy or input refused naming the flag it came in with nothing written.
 */
import { describe, expect, it } from 'vitest';
import { freshDb, json } from './support';

describe('waybill schedule and schedules', () => {
  it('adds, lists, pauses, resumes and deletes a schedule, each audited', async () => {
    const db = await freshDb();
    const input = JSON.stringify({ count: 1, outbox: 'outbox.jsonl' });
    const added = await db.cli([
      'schedule',
      'add',
      'nightly',
      'notify',
      '--cron',
      '0 0 2 * * *',
      '--tz',
      'Europe/Berlin',
      '--input',
      input,
      '--catch-up',
      'all',
      '--catch-up-cap',
      '3',
    ]);
    expect(added.stderr).toBe('');
    expect(added.stdout).toMatch(
      /^added schedule nightly: notify on 0 0 2 \* \* \* \(Europe\/Berlin\), next \S+T0[01]:00:00.000Z\n$/,
    );

    const listed = json(await db.cli(['schedules', '--json']));
    expect(listed).toEqual([
      expect.objectContaining({
        name: 'nightly',
        workflow: 'notify',
        timeZone: 'Europe/Berlin',
        input: expect.objectContaining({ count: 1, outbox: 'outbox.jsonl' }),
        overlap: 'skip',
        catchUp: 'all',
        catchUpCap: 3,
        paused: false,
        source: 'operator',
        lastRuns: [],
      }),
    ]);
    expect(listed[0].nextFireAt).toBeGreaterThan(Date.now() / 1000);
    expect((await db.cli(['schedules'])).stdout).toMatch(/nightly\s+notify\s+0 0 2 \* \* \*\s+Europe\/Berlin/);

    expect((await db.cli(['schedule', 'pause', 'nightly', '--reason', 'holiday'])).stdout).toBe(
      'paused schedule nightly\n',
    );
    expect(json(await db.cli(['schedules', '--json']))[0]).toMatchObject({ paused: true, nextFireAt: null });
    expect((await db.cli(['schedule', 'resume', 'nightly'])).stdout).toMatch(/^resumed schedule nightly: next /);
    expect((await db.cli(['schedule', 'delete', 'nightly'])).stdout).toBe(
      'deleted schedule nightly; the runs it started stay\n',
    );
    const gone = await db.cli(['schedule', 'delete', 'nightly']);
    expect([gone.code, gone.stderr]).toEqual([1, 'waybill schedule: schedule nightly not found\n']);

    const audit = db.raw((conn) => conn.prepare('SELECT action, target, detail FROM audit ORDER BY id').all());
    expect(audit).toEqual([
      { action: 'schedule-add', target: 'nightly', detail: 'workflow notify, cron 0 0 2 * * * (Europe/Berlin)' },
      { action: 'schedule-pause', target: 'nightly', detail: 'reason: holiday' },
      { action: 'schedule-resume', target: 'nightly', detail: null },
      { action: 'schedule-delete', target: 'nightly', detail: null },
    ]);
  });

  it('refuses a bad cron, time zone, policy or input naming the flag typed, exits 2, and writes nothing', async () => {
    const db = await freshDb();
    await db.cli(['start', 'notify', '--input', JSON.stringify({ count: 1, outbox: 'o.jsonl' }), '--id', 'r1']);
    const cases: [string[], RegExp][] = [
      [['--cron', '* * * * *', '--tz', 'Mars/Base'], /^waybill schedule: --tz: unknown time zone "Mars\/Base"/],
      [['--cron', 'every day'], /^waybill schedule: --cron: must have five fields .*; this has 2$/m],
      [['--cron', '61 * * * *'], /^waybill schedule: --cron: Invalid value for minute: 61$/m],
      [
        ['--cron', '* * * * *', '--overlap', 'maybe'],
        /^waybill schedule: --overlap: must be one of skip, queue, cancel/,
      ],
      [
        ['--cron', '* * * * *', '--catch-up', 'some'],
        /^waybill schedule: --catch-up: must be one of none, latest, all/,
      ],
      [['--cron', '* * * * *', '--catch-up-cap', '0'], /^waybill schedule: --catch-up-cap: must be at least 1/],
      [['--cron', '* * * * *', '--input', '{"count":"x"}'], /input/],
    ];
    for (const [flags, message] of cases) {
      const result = await db.cli(['schedule', 'add', 'bad', 'notify', ...flags]);
      expect(result.code, flags.join(' ')).toBe(2);
      expect(result.stderr, flags.join(' ')).toMatch(message);
    }
    expect(json(await db.cli(['schedules', '--json']))).toEqual([]);
    expect(
      db.raw((conn) => conn.prepare('SELECT count(*) AS n FROM audit WHERE action LIKE ?').get('schedule%')),
    ).toEqual({ n: 0 });
  });

  it('words a refused cap, cron or action as the API does, exits 2, and writes nothing', async () => {
    const db = await freshDb();
    const before = db.dump();
    const input = JSON.stringify({ count: 1, outbox: 'outbox.jsonl' });
    const add = (...flags: string[]) => ['schedule', 'add', 'bad', 'notify', '--input', input, ...flags];
    const cases: [string[], string][] = [
      // The spec's own words for a cap, as POST /api/v1/schedules answers them.
      [
        add('--cron', '* * * * *', '--catch-up', 'all', '--catch-up-cap', '2.5'),
        '--catch-up-cap: must be a whole number',
      ],
      [add('--cron', '* * * * *', '--catch-up', 'all', '--catch-up-cap=-3'), '--catch-up-cap: must be at least 1'],
      [
        add('--cron', '* * * * *', '--catch-up', 'all', '--catch-up-cap', '5000'),
        '--catch-up-cap: must be at most 1000',
      ],
      [add('--cron', '* * * * *', '--catch-up', 'all', '--catch-up-cap', 'ten'), '--catch-up-cap: must be a number'],
      // A cap bounds what `all` fires: with another policy it would be kept and never read.
      [
        add('--cron', '* * * * *', '--catch-up', 'latest', '--catch-up-cap', '7'),
        '--catch-up-cap: only with catch-up all (latest fires one missed tick, none fires none)',
      ],
      [
        add('--cron', '* * * * *', '--catch-up-cap', '7'),
        '--catch-up-cap: only with catch-up all (latest fires one missed tick, none fires none)',
      ],
      // croner reads a seventh field, the year; the docs and --help promise five, or six with seconds first.
      [
        add('--cron', '* * * * * * *'),
        '--cron: must have five fields (minute hour day month weekday), or six with seconds first; this has 7',
      ],
      [['schedule', 'frobnicate', 'm1'], 'unknown action "frobnicate": use add, pause, resume or delete'],
      [['schedule', 'paus', 'm1'], 'unknown action "paus": did you mean pause? (use add, pause, resume or delete)'],
      [['schedule'], 'missing action: use add, pause, resume or delete'],
      [['webhook', 'frobnicate'], 'unknown action "frobnicate": use add, pause, resume, delete, deliveries or resend'],
    ];
    const answered: string[] = [];
    for (const [args] of cases) {
      const result = await db.cli(args);
      answered.push(`${result.code} ${result.stdout}${result.stderr}`);
    }
    expect(answered).toEqual(cases.map(([args, message]) => `2 waybill ${args[0]}: ${message}\n`));
    expect(db.dump()).toEqual(before);
  });

  it('keeps a cap given with catch-up all, the default when none is given, and shows none with another policy', async () => {
    const db = await freshDb();
    const input = JSON.stringify({ count: 1, outbox: 'outbox.jsonl' });
    const add = async (name: string, ...flags: string[]) =>
      json(
        await db.cli(['schedule', 'add', name, 'notify', '--cron', '* * * * *', '--input', input, '--json', ...flags]),
      );
    expect(await add('a', '--catch-up', 'all', '--catch-up-cap', '7')).toMatchObject({ catchUp: 'all', catchUpCap: 7 });
    expect(await add('b', '--catch-up', 'all')).toMatchObject({ catchUp: 'all', catchUpCap: 10 });
    expect(await add('c')).toMatchObject({ catchUp: 'latest', catchUpCap: null });
  });
});
