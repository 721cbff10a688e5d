/**
 * `waybill webhook add|pause|resume|delete|deliveries|resend` and `waybill webhooks`: each change audited as the
 * CLI's caller, the secret printed once; a bad URL or an unknown event refused naming its field, nothing written.
 */
import { describe, expect, it } from 'vitest';
import { freshDb, json } from './support';

describe('waybill webhook and webhooks', () => {
  it('adds, lists, pauses, resumes, resends and deletes, each audited', async () => {
    const db = await freshDb();
    const added = await db.cli([
      'webhook',
      'add',
      'https://ops.example.com/hooks',
      '--event',
      'run.failed',
      '--event',
      'run.completed',
      '--secret',
      'a-secret-of-sixteen-plus',
      '--as',
      'ann',
    ]);
    expect(added.stderr).toBe('');
    const id = /^added webhook (wh_[0-9a-f]{12}): /.exec(added.stdout)?.[1];
    expect(added.stdout).toBe(
      `added webhook ${id}: https://ops.example.com/hooks for run.failed, run.completed\nsecret a-secret-of-sixteen-plus (shown this once: receivers verify the Waybill-Signature header with it)\n`,
    );
    expect(json(await db.cli(['webhooks', '--json']))).toEqual([
      expect.objectContaining({ id, events: ['run.failed', 'run.completed'], paused: false, secretHint: '…plus' }),
    ]);
    expect((await db.cli(['webhooks'])).stdout).toMatch(
      new RegExp(`${id}\\s+https://ops.example.com/hooks\\s+run.failed,run.completed\\s+active\\s+…plus`),
    );
    expect((await db.cli(['webhook', 'pause', id!, '--reason', 'moving'])).stdout).toBe(`paused webhook ${id}\n`);
    expect((await db.cli(['webhook', 'resume', id!])).stdout).toBe(`resumed webhook ${id}\n`);

    db.raw((c) =>
      c
        .prepare(
          `INSERT INTO webhook_deliveries (id, webhook_id, event, run_id, payload_json, status, attempts, next_attempt_at,
            last_status, created_at, updated_at) VALUES (?, ?, 'run.failed', 'r1', '{"type":"run.failed","at":1,"data":{}}',
            'failed', 10, 1, 503, 1, 1)`,
        )
        .run(`${id}:run.failed:r1:1`, id),
    );
    expect((await db.cli(['webhook', 'deliveries', '--status', 'failed'])).stdout).toMatch(
      new RegExp(`${id}:run.failed:r1:1\\s+run.failed\\s+failed\\s+10\\s+HTTP 503`),
    );
    expect((await db.cli(['webhook', 'resend', `${id}:run.failed:r1:1`])).stdout).toBe(
      `re-sending ${id}:run.failed:r1:1: due now, under the same id\n`,
    );
    expect(json(await db.cli(['webhook', 'deliveries', '--json']))).toEqual([
      expect.objectContaining({ status: 'pending', attempts: 0 }),
    ]);
    expect((await db.cli(['webhook', 'delete', id!])).stdout).toBe(`deleted webhook ${id} and its deliveries\n`);
    const gone = await db.cli(['webhook', 'delete', id!]);
    expect(gone.code).toBe(1);
    const audit = db.raw((c) =>
      c.prepare("SELECT actor, action, target, detail FROM audit WHERE action LIKE 'webhook%' ORDER BY id").all(),
    ) as { actor: string; action: string }[];
    expect(audit.map((a) => a.action)).toEqual([
      'webhook-add',
      'webhook-pause',
      'webhook-resume',
      'webhook-resend',
      'webhook-delete',
    ]);
    expect(audit[0]).toMatchObject({
      actor: 'ann',
      detail: 'https://ops.example.com/hooks for run.failed, run.completed',
    });
  });

  it('refuses a bad URL, an unknown event or no event, naming it, and writes nothing', async () => {
    const db = await freshDb();
    await db.cli(['webhooks']);
    const before = JSON.stringify(db.dump());
    const url = await db.cli(['webhook', 'add', 'not a url', '--event', 'run.failed']);
    expect(url.code).toBe(2);
    expect(url.stderr).toMatch(/url: must be an http:\/\/ or https:\/\/ URL/);
    const event = await db.cli(['webhook', 'add', 'https://x.example', '--event', 'run.exploded']);
    expect(event.code).toBe(2);
    expect(event.stderr).toMatch(/events\.0: must be one of run\.failed, /);
    const none = await db.cli(['webhook', 'add', 'https://x.example']);
    expect(none.code).toBe(2);
    expect(none.stderr).toMatch(/missing --event NAME/);
    expect(JSON.stringify(db.dump())).toBe(before);
  });
});
