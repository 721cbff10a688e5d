/**
 * `waybill emit`: the first send records the event and starts the subscribed workflow's run; sent again it says
 * so and writes nothing; other data under the id, or a missing --id, is refused with nothing written.
 */
import { describe, expect, it } from 'vitest';
import { freshDb, json } from './support';

describe('waybill emit', () => {
  it('starts one run per subscribed workflow however often the event is sent', async () => {
    const db = await freshDb();
    db.raw((conn) =>
      conn
        .prepare(
          `INSERT INTO workflows (name, description, input_schema_json, total_steps, version, events_json, published_by, updated_at)
           VALUES ('ship', NULL, ?, NULL, NULL, '["order.created"]', 'w1', 0)`,
        )
        .run(JSON.stringify({ type: 'object', properties: { order: { type: 'number' } }, required: ['order'] })),
    );
    const args = ['emit', 'order.created', '--id', 'o-7', '--data', '{"order": 7}'];
    const first = await db.cli(args);
    expect([first.code, first.stderr, first.stdout]).toEqual([
      0,
      '',
      'recorded event order.created o-7\n  started ship:event:o-7\n',
    ]);
    const before = JSON.stringify(db.dump());
    const again = await db.cli(args);
    expect(again.stdout).toBe('event o-7 was recorded before; nothing new was written\n  run ship:event:o-7\n');
    expect(json(await db.cli([...args, '--json']))).toMatchObject({
      recorded: false,
      runs: [{ workflow: 'ship', runId: 'ship:event:o-7', existed: true }],
    });
    expect(JSON.stringify(db.dump())).toBe(before);
    expect(db.raw((conn) => conn.prepare('SELECT id, workflow, input_json FROM runs').all())).toEqual([
      { id: 'ship:event:o-7', workflow: 'ship', input_json: '{"order":7}' },
    ]);

    const other = await db.cli(['emit', 'order.created', '--id', 'o-7', '--data', '{"order": 8}']);
    expect([other.code, other.stderr]).toEqual([
      1,
      'waybill emit: event o-7 was sent before with another data; nothing was written\n',
    ]);
    const noId = await db.cli(['emit', 'order.created']);
    expect(noId.code).toBe(2);
    expect(noId.stderr).toMatch(/missing --id ID/);
    expect(JSON.stringify(db.dump())).toBe(before);
  });
});
