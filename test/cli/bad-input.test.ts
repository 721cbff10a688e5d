/**
 * Bad input of any kind: exit 2, one line on stderr naming what was wrong, nothing on stdout, and not a
 * row of any table changed.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { freshDb, insertOutsideRun, json, type Result, runCli } from './support';

describe('waybill with bad input', () => {
  // Forty-odd CLI processes in turn, a few seconds each when the cores are busy: hence the long budget.
  it('exits 2 with one line naming the problem, and writes nothing', async () => {
    const db = await freshDb();
    expect(
      json(
        await db.cli([
          'start',
          'notify',
          '--input',
          JSON.stringify({ count: 2, outbox: 'outbox.jsonl' }),
          '--id',
          'r1',
          '--json',
        ]),
      ).id,
    ).toBe('r1');
    insertOutsideRun(db, 'ext-1', { claimAgeS: 3600 });
    const badFile = join(db.dir, 'bad.json');
    writeFileSync(badFile, '{"count": 2,');
    const before = db.dump();

    const cases: [string[], RegExp][] = [
      [['frobnicate'], /^waybill: unknown command "frobnicate"/],
      [[], /^usage: waybill <command>/],
      [['--verbose', 'runs'], /^waybill: unknown option '--verbose'/],
      [['runs', '--bogus'], /^waybill runs: Unknown option '--bogus'$/],
      [['runs', 'extra'], /^waybill runs: Unexpected argument 'extra'/],
      [['runs', '--status', 'sleeping'], /^waybill runs: --status: Invalid option: expected one of "queued"/],
      [
        ['runs', '--waiting', 'human'],
        /^waybill runs: --waiting: must be one of approval, signal, sleep, child, event$/,
      ],
      [
        ['runs', '--waiting', 'approval', '--status', 'queued'],
        /^waybill runs: --waiting: lists waiting runs only: leave status out, or make it waiting$/,
      ],
      [
        ['cancel', '--all-matching', '--waiting', 'human', '--yes'],
        /^waybill cancel: --waiting: must be one of approval, signal, sleep, child, event$/,
      ],
      [['runs', '--limit', '0'], /^waybill runs: --limit: /],
      [['runs', '--limit', 'ten'], /^waybill runs: --limit: must be a whole number, 1-10000$/],
      [['runs', '--limit'], /^waybill runs: Option '--limit <value>' argument missing$/],
      [['start'], /^waybill start: missing <workflow>$/],
      [['start', 'notify', '--priority', '1.5'], /^waybill start: --priority: must be a whole number, like 10 or -5$/],
      [['start', 'notify', '--priority', '5000'], /^waybill start: --priority: must be at most 1000$/],
      [
        ['start', 'notify', '--traceparent', '00-abc-01'],
        /^waybill start: --traceparent: must be a W3C traceparent: 00-<32 hex trace id>-<16 hex span id>-<2 hex flags>, lowercase$/,
      ],
      [
        ['start', 'nope', '--input', '{}'],
        /^waybill start: unknown workflow "nope" \(known: agent-batch, notify, review-and-send\)$/,
      ],
      [
        ['start', 'notify', '--input', '{"count": 2,'],
        /^waybill start: --input is not valid JSON at line 1 column 13 \(position 12\): /,
      ],
      [
        ['start', 'notify', '--input', `@${badFile}`],
        /^waybill start: --input is not valid JSON at line \d+ column \d+ /,
      ],
      [
        ['start', 'notify', '--input', `@${join(db.dir, 'missing.json')}`],
        /^waybill start: --input: cannot read .*missing\.json: ENOENT$/,
      ],
      [
        ['start', 'notify', '--input', JSON.stringify({ count: 'two', outbox: 'outbox.jsonl' })],
        /^waybill start: invalid input for notify: count: must be a number$/,
      ],
      [
        ['start', 'notify', '--input', JSON.stringify({ count: 2, outbox: '/etc/waybill.jsonl' })],
        /^waybill start: invalid input for notify: outbox: must be a path inside the data directory \(WAYBILL_DATA_DIR\), such as outbox.jsonl: absolute paths are refused$/,
      ],
      [
        ['start', 'notify', '--input', JSON.stringify({ count: 2, outbox: 'a/../../x.jsonl' })],
        /^waybill start: invalid input for notify: outbox: must stay inside the data directory: "\.\." is refused$/,
      ],
      [
        ['start', 'agent-batch', '--input', '[1, 2]'],
        /^waybill start: invalid input for agent-batch: \(input\): input must be an object$/,
      ],
      [
        ['start', 'notify', '--input', JSON.stringify({ count: 2, outbox: 'outbox.jsonl' }), '--id', 'has space'],
        /^waybill start: --id: letters, digits/,
      ],
      [['inspect'], /^waybill inspect: missing <runId>$/],
      [['inspect', 'bad id'], /^waybill inspect: run id: must not contain spaces or control characters$/],
      [['inspect', 'r1', 'r2'], /^waybill inspect: unexpected argument "r2"$/],
      [['claims', '--run', 'a\tb'], /^waybill claims: --run: must not contain spaces/],
      [['claims', '--orphaned=yes'], /^waybill claims: Option '--orphaned' does not take an argument$/],
      [['expire'], /^waybill expire: missing <key…> \(or --all-orphaned\)$/],
      [['expire', 'ext-1:step:2', '--all-orphaned'], /^waybill expire: give keys or --all-orphaned, not both$/],
      [['expire', 'bad key'], /^waybill expire: key: must not contain spaces/],
      [['resolve', 'ext-1:step:2'], /^waybill resolve: missing --result JSON\|@file/],
      [
        ['resolve', 'ext-1:step:2', '--result', '{sent: true}'],
        /^waybill resolve: --result is not valid JSON at line 1 column 2 \(position 1\): /,
      ],
      [
        ['resolve', 'ext-1:step:2', '--result', ''],
        /^waybill resolve: --result is not valid JSON at line 1 column 1 \(position 0\): /,
      ],
      [['pause'], /^waybill pause: missing <runId>$/],
      [['cancel', 'r1', '--force'], /^waybill cancel: Unknown option '--force'$/],
      [['retry', 'bad\u0001id'], /^waybill retry: run id: must not contain/],
      [['sweep', 'now'], /^waybill sweep: Unexpected argument 'now'/],
      [['worker', '--concurrency', '1.5'], /^waybill worker: --concurrency: must be a whole number, 1-1000$/],
      [['worker', '--concurrency', '0'], /^waybill worker: --concurrency: /],
      [['worker', '--id', 'two words'], /^waybill worker: --id: must not contain spaces/],
      [
        ['worker', '--url', '127.0.0.1:3000'],
        /^waybill worker: --url: must be the dashboard's http\(s\) address, e\.g\. http:\/\/127\.0\.0\.1:3000$/,
      ],
      [['worker', '--url', 'ftp://127.0.0.1'], /^waybill worker: --url: must be the dashboard's http\(s\) address/],
      [['worker', '--url'], /^waybill worker: Option '--url <value>' argument missing$/],
      [['logs'], /^waybill logs: missing <runId>$/],
      [['logs', 'bad id'], /^waybill logs: run id: must not contain spaces or control characters$/],
      [['logs', 'r1', '--after', 'last'], /^waybill logs: --after: must be a whole number, 0 or more \(a line seq\)$/],
      [['logs', 'r1', '--after=-1'], /^waybill logs: --after: must be a whole number, 0 or more \(a line seq\)$/],
      [['logs', 'r1', '--after', '1.5'], /^waybill logs: --after: must be a whole number, 0 or more \(a line seq\)$/],
      [['logs', 'r1', '--limit', '0'], /^waybill logs: --limit: /],
      [['logs', 'r1', '--limit', '100001'], /^waybill logs: --limit: /],
      [['logs', 'r1', '--since', '5'], /^waybill logs: Unknown option '--since'$/],
    ];
    // Two at a time: each is a process, and the machine has two cores.
    const results: Result[] = [];
    for (let i = 0; i < cases.length; i += 2) {
      results.push(...(await Promise.all(cases.slice(i, i + 2).map(([args]) => db.cli(args)))));
    }
    cases.forEach(([args, expected], i) => {
      const { code, stdout, stderr } = results[i]!;
      const lines = stderr.trimEnd().split('\n');
      const what = `waybill ${args.join(' ')} → ${code} ${stderr}`;
      expect(code, what).toBe(2);
      expect(stdout, what).toBe('');
      if (args.length > 0) expect(lines, what).toHaveLength(1);
      expect(lines[0], what).toMatch(expected);
    });
    expect(db.dump()).toEqual(before);
  }, 600_000);

  it('refuses a --db URL it cannot open, and a bad environment, naming them', async () => {
    const db = await freshDb();
    const before = db.dump();
    const [url, env, noDb, keep, groupCommit] = await Promise.all([
      runCli(['--db', 'mysql://x/y', 'runs']),
      db.cli(['runs'], { env: { WAYBILL_CLAIM_TTL_MS: 'soon' } }),
      runCli(['runs', '--db']),
      db.cli(['worker'], { env: { WAYBILL_RUN_LOG_LINES: '0' } }),
      db.cli(['worker'], { env: { WAYBILL_GROUP_COMMIT: 'yes' } }),
    ]);
    expect(keep).toEqual({
      code: 2,
      stdout: '',
      stderr: 'waybill worker: invalid environment: WAYBILL_RUN_LOG_LINES: must be a whole number, 1-100000\n',
    });
    expect(url).toMatchObject({ code: 2, stdout: '' });
    expect(url.stderr).toMatch(
      /^waybill runs: DATABASE_URL must start with file: or postgres:\/\/, got "mysql:\/\/x\/y"\n$/,
    );
    expect(env).toMatchObject({ code: 2, stdout: '' });
    expect(env.stderr).toMatch(/^waybill runs: invalid environment: WAYBILL_CLAIM_TTL_MS: .*\n$/);
    expect(noDb).toMatchObject({ code: 2, stderr: "waybill runs: Option '--db <value>' argument missing\n" });
    expect(groupCommit).toMatchObject({
      code: 2,
      stdout: '',
      stderr: 'waybill worker: invalid environment: WAYBILL_GROUP_COMMIT: must be on or off\n',
    });
    expect(db.dump()).toEqual(before);
  });
});
