/**
 * `waybill start … --id X` twice, as a process: the same workflow and input exits 0 with the run and writes
 * nothing (no run, no event, no audit line); another input or workflow exits 1 with CONFLICT, naming what
 * differs, and writes nothing either.
 */
import { describe, expect, it } from 'vitest';
import { freshDb, json } from './support';

describe('waybill start with an id that exists', () => {
  it('answers the same start with the run and refuses another, writing nothing', async () => {
    const db = await freshDb();
    const first = await db.cli(['start', 'agent-batch', '--input', '{"count":3}', '--id', 'r1']);
    expect(first.code, first.stderr).toBe(0);
    expect(first.stdout).toBe('queued r1 (agent-batch, 3 steps)\n');
    const before = db.dump();
    expect(before.audit).toHaveLength(1);
    expect(before.step_events).toHaveLength(1);

    // A default written out is the same parsed input.
    const again = await db.cli(['start', 'agent-batch', '--input', '{"count":3,"latencyMs":50}', '--id', 'r1']);
    expect(again).toEqual({
      code: 0,
      stdout: 'exists r1 (agent-batch, 3 steps)\n',
      stderr: 'waybill start: run r1 exists with this workflow and input (it is queued): not started again\n',
    });
    const view = json(await db.cli(['start', 'agent-batch', '--input', '{"count":3}', '--id', 'r1', '--json']));
    expect(view).toMatchObject({ id: 'r1', workflow: 'agent-batch', status: 'queued' });
    expect(db.dump()).toEqual(before);

    const refusals: [string[], string][] = [
      [
        ['start', 'agent-batch', '--input', '{"count":4}', '--id', 'r1'],
        'waybill start: run r1 exists with another input: input.count is 3, not 4\n',
      ],
      [
        ['start', 'review-and-send', '--id', 'r1'],
        'waybill start: run r1 exists with another workflow: it is agent-batch, not review-and-send\n',
      ],
    ];
    for (const [args, stderr] of refusals) expect(await db.cli(args)).toEqual({ code: 1, stdout: '', stderr });
    const refused = await db.cli(['start', 'agent-batch', '--input', '{"count":4}', '--id', 'r1', '--json']);
    expect(JSON.parse(refused.stderr)).toMatchObject({ error: { code: 'CONFLICT', exitCode: 1 } });
    expect(db.dump()).toEqual(before);
  });
});
