/**
 * A user's own workflows, end to end with real processes: `waybill worker --workflows <module>` publishes
 * them (name, JSON Schema, description, version, fixed total, who serves them), `waybill start` checks input
 * against what was published (exit 2 naming the field, nothing written), a good run completes under the
 * worker with each side effect executed once, and once the worker stops its workflows say "no live worker".
 */
import { describe, expect, it } from 'vitest';
import { BIN, type Db, freshDb, json } from '../cli/support';
import { spawnCommand } from '../support/child';
import { until } from '../support/until';
import { effectCounts, TALLY, workerEnvFor, writeModule } from './user-module';

const published = (db: Db) =>
  db.raw((c) =>
    c
      .prepare<
        [],
        {
          name: string;
          description: string | null;
          input_schema_json: string;
          total_steps: number | null;
          version: string | null;
          published_by: string;
        }
      >('SELECT name, description, input_schema_json, total_steps, version, published_by FROM workflows ORDER BY name')
      .all(),
  );
const served = (db: Db, id: string) =>
  db.raw((c) =>
    c
      .prepare<[string], { workflows_json: string | null; stopped_at: number | null }>(
        'SELECT workflows_json, stopped_at FROM workers WHERE id = ?',
      )
      .get(id),
  );
const run = (db: Db, id: string) =>
  db.raw((c) =>
    c
      .prepare<[string], { status: string; input_json: string; total_steps: number | null }>(
        'SELECT status, input_json, total_steps FROM runs WHERE id = ?',
      )
      .get(id),
  );
/** Every row, less the live worker's heartbeat (which moves by itself): equal means the command wrote nothing. */
const rowsOf = (db: Db) => {
  const dump = db.dump();
  return { ...dump, workers: dump.workers!.map((w) => ({ ...(w as object), heartbeat_at: 'moving' })) };
};
const count = (db: Db, sql: string, ...args: string[]) =>
  db.raw((c) => (c.prepare(sql).get(...args) as { n: number }).n);

describe('a user workflow module under waybill worker --workflows', () => {
  it('is published with its JSON Schema, checked at start, run once per step, and marked unserved once its worker stops', async () => {
    const db = await freshDb();
    const module = writeModule(db.dir, 'workflows.mjs', TALLY);
    const effects = `${db.dir}/effects.log`;
    const args = ['worker', '--workflows', module, '--id', 'w-user'];
    const worker = spawnCommand(process.execPath, [BIN, '--db', db.url, ...args], {
      env: { WAYBILL_HEARTBEAT_MS: '200', ...workerEnvFor(args) },
    });
    await until('the worker to publish', () => worker.stderr().includes('"msg":"serving workflows"'));

    // Published: every workflow the worker serves, the built-ins too, each with its JSON Schema.
    const rows = published(db);
    expect(rows.map((r) => r.name)).toEqual(['agent-batch', 'notify', 'ping', 'review-and-send', 'tally']);
    expect(rows.every((r) => r.published_by === 'w-user')).toBe(true);
    const tally = rows.find((r) => r.name === 'tally')!;
    expect(tally).toMatchObject({
      description: 'Counts to count, one side effect per step.',
      version: 'v1.2.3',
      total_steps: null,
    });
    const schema = JSON.parse(tally.input_schema_json);
    expect(schema).toMatchObject({
      type: 'object',
      additionalProperties: false,
      required: ['count', 'effects'],
      properties: {
        count: { type: 'integer', minimum: 1, maximum: 500, description: 'how many steps' },
        label: { type: 'string', minLength: 2, default: 'item' },
        pace: { type: 'string', enum: ['steady', 'brisk'], default: 'steady' },
        loud: { type: 'boolean', default: false },
        tags: { type: 'array', default: [] },
      },
    });
    expect(rows.find((r) => r.name === 'ping')!.total_steps).toBe(3);
    expect(JSON.parse(served(db, 'w-user')!.workflows_json!)).toEqual([
      'agent-batch',
      'notify',
      'review-and-send',
      'ping',
      'tally',
    ]);

    const listed = json<{ name: string; servedBy: string[]; builtin: boolean; version: string | null }[]>(
      await db.cli(['workflows', '--json']),
    );
    expect(listed.map((w) => [w.name, w.builtin, w.version, w.servedBy])).toEqual([
      ['agent-batch', true, null, ['w-user']],
      ['notify', true, null, ['w-user']],
      ['review-and-send', true, null, ['w-user']],
      ['ping', false, null, ['w-user']],
      ['tally', false, 'v1.2.3', ['w-user']],
    ]);

    // Wrong fields: exit 2, one line naming each, not a row changed.
    const before = rowsOf(db);
    const refusals: [unknown, RegExp][] = [
      [{ count: 'five', effects }, /^waybill start: invalid input for tally: count: must be a number$/],
      [{ count: 2.5, effects }, /^waybill start: invalid input for tally: count: must be a whole number$/],
      [{ count: 501, effects }, /^waybill start: invalid input for tally: count: must be at most 500$/],
      [{ count: 2 }, /^waybill start: invalid input for tally: effects: is required$/],
      [
        { count: 2, effects, pace: 'sprint' },
        /^waybill start: invalid input for tally: pace: must be one of "steady", "brisk"$/,
      ],
      [
        { count: 2, effects, label: 'x' },
        /^waybill start: invalid input for tally: label: must be at least 2 characters long$/,
      ],
      [{ count: 2, effects, colour: 'red' }, /^waybill start: invalid input for tally: colour: is not a known field$/],
      [{ count: 2, effects, tags: 'a' }, /^waybill start: invalid input for tally: tags: must be an array$/],
    ];
    for (const [input, message] of refusals) {
      const refused = await db.cli(['start', 'tally', '--input', JSON.stringify(input)]);
      expect(refused.code, JSON.stringify(input)).toBe(2);
      expect(refused.stdout).toBe('');
      expect(refused.stderr.trimEnd().split('\n')).toHaveLength(1);
      expect(refused.stderr.trimEnd()).toMatch(message);
    }
    const unknown = await db.cli(['start', 'tallly', '--input', '{}']);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr.trimEnd()).toBe(
      'waybill start: unknown workflow "tallly" (known: agent-batch, notify, review-and-send, ping, tally)',
    );
    expect(rowsOf(db)).toEqual(before);

    // Right input: stored parsed (the published defaults applied), run by the worker, each step once.
    const started = json(
      await db.cli(['start', 'tally', '--id', 't1', '--json', '--input', JSON.stringify({ count: 6, effects })]),
    );
    expect(started).toMatchObject({ id: 't1', workflow: 'tally', status: 'queued' });
    expect(JSON.parse(run(db, 't1')!.input_json)).toEqual({
      count: 6,
      effects,
      label: 'item',
      pace: 'steady',
      delayMs: 0,
      loud: false,
      tags: [],
    });
    // tally's total is a function of its input: unknown to the starter, set by the worker when it takes the run.
    expect(started.totalSteps).toBeNull();
    expect(json(await db.cli(['start', 'ping', '--id', 'p1', '--json'])).totalSteps).toBe(3);
    await until(
      'both runs to complete',
      () => run(db, 't1')?.status === 'completed' && run(db, 'p1')?.status === 'completed',
    );
    expect(run(db, 't1')!.total_steps).toBe(6);
    const counts = effectCounts(effects);
    expect([...counts.keys()].sort()).toEqual([0, 1, 2, 3, 4, 5].map((n) => `t1:step:${n}`));
    expect([...counts.values()]).toEqual([1, 1, 1, 1, 1, 1]);
    expect(count(db, 'SELECT count(*) AS n FROM committed WHERE run_id = ?', 't1')).toBe(6);
    expect(count(db, 'SELECT executed + skipped + awaited AS n FROM progress WHERE run_id = ?', 't1')).toBe(6);
    expect(count(db, 'SELECT executed AS n FROM progress WHERE run_id = ?', 't1')).toBe(6);
    expect(count(db, 'SELECT count(*) AS n FROM committed WHERE run_id = ?', 'p1')).toBe(3);

    // The worker stops: its workflows stay listed, served by nobody, and a start says the run will wait.
    worker.kill('SIGTERM');
    expect(await worker.exited).toEqual({ code: 0, signal: null });
    expect(served(db, 'w-user')!.stopped_at).not.toBeNull();
    const table = (await db.cli(['workflows'])).stdout.split('\n');
    expect(table.find((line) => line.startsWith('tally'))).toMatch(/^tally +v1\.2\.3 +no live worker +Counts to count/);
    const waiting = await db.cli(['start', 'tally', '--id', 't2', '--input', JSON.stringify({ count: 1, effects })]);
    expect(waiting.code, waiting.stderr).toBe(0);
    expect(waiting.stderr.trimEnd()).toBe(
      'waybill start: no live worker serves tally yet; the run waits for one (waybill worker --workflows <module>)',
    );
    expect(run(db, 't2')!.status).toBe('queued');
  });
});
