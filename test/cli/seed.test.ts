/**
 * `waybill seed-demo` as a real process: bad flags exit 2 with one line and write nothing; --json prints
 * the exact counts written, which the file itself confirms.
 */
import { describe, expect, it } from 'vitest';
import { freshDb, json } from './support';

describe('waybill seed-demo', () => {
  it('refuses bad flags with exit 2, one line, nothing written', async () => {
    const db = await freshDb();
    const before = db.dump();
    const cases: [string[], RegExp][] = [
      [['seed-demo', '--runs', '0'], /^waybill seed-demo: --runs: /],
      [['seed-demo', '--runs', 'ten'], /^waybill seed-demo: --runs: must be a whole number, 1-1000000$/],
      [['seed-demo', '--steps', '1.5'], /^waybill seed-demo: --steps: must be a whole number, 1-100000$/],
      [['seed-demo', '--big-run-steps', '-3'], /^waybill seed-demo: /],
      [['seed-demo', '--prefix', 'has space'], /^waybill seed-demo: --prefix: letters, digits/],
      [['seed-demo', '--bogus'], /^waybill seed-demo: Unknown option '--bogus'$/],
      [['seed-demo', 'extra'], /^waybill seed-demo: Unexpected argument 'extra'/],
    ];
    for (const [args, pattern] of cases) {
      const result = await db.cli(args);
      expect({ args, code: result.code, stdout: result.stdout }).toEqual({ args, code: 2, stdout: '' });
      expect(result.stderr.trimEnd().split('\n'), args.join(' ')).toHaveLength(1);
      expect(result.stderr.trimEnd()).toMatch(pattern);
    }
    expect(db.dump()).toEqual(before);
  });

  it('--json reports the exact rows written; the same prefix again is refused with exit 1', async () => {
    const db = await freshDb();
    const report = json(await db.cli(['seed-demo', '--runs', '10', '--steps', '8', '--big-run-steps', '50', '--json']));
    expect(report).toMatchObject({
      runs: 11,
      byStatus: { completed: 8, running: 1, failed: 1, paused: 1 },
      committed: 7 * 8 + 50 + 4 + 6 + 2,
      events: 2 + 3 + 1 + 2,
      claims: 1,
      orphanedClaims: 1,
      progress: 11,
      workers: 4,
    });
    const counts = db.raw((c) =>
      Object.fromEntries(
        ['runs', 'committed', 'step_events', 'claims', 'progress', 'workers'].map((t) => [
          t,
          (c.prepare(`SELECT count(*) AS n FROM ${t}`).get() as { n: number }).n,
        ]),
      ),
    );
    expect(counts).toEqual({ runs: 11, committed: 118, step_events: 8, claims: 1, progress: 11, workers: 4 });

    const again = await db.cli(['seed-demo', '--runs', '10', '--steps', '8']);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/^waybill seed-demo: .*seed-000001.*--prefix/);
  });
});
