/**
 * `waybill start --budget` and `waybill budget`: a run's budget set at start and raised after, read back, audited
 * with its change; a budget that is not one refused naming the flag (exit 2) and nothing written.
 */
import { describe, expect, it } from 'vitest';
import { freshDb, json } from './support';

describe('waybill budget', () => {
  it('sets a budget at start, raises it after, and refuses what is not a budget', async () => {
    const db = await freshDb();
    const input = JSON.stringify({ count: 2, outbox: 'outbox.jsonl' });
    const started = await db.cli(['start', 'notify', '--input', input, '--id', 'r1', '--budget', '2.50', '--json']);
    expect(started.code, started.stderr).toBe(0);
    expect(json(started).budgetUsd).toBe(2.5);

    for (const bad of ['0', 'abc', '1e3', '1000001']) {
      const refused = await db.cli(['budget', 'r1', bad]);
      expect(refused.code, bad).toBe(2);
      expect(refused.stderr, bad).toMatch(/^waybill budget: <usd>: must be /);
    }
    const badStart = await db.cli(['start', 'notify', '--input', input, '--id', 'r2', '--budget', '0']);
    expect([badStart.code, badStart.stderr]).toEqual([2, 'waybill start: --budget: must be more than 0 US dollars\n']);

    expect((await db.cli(['pause', 'r1'])).code).toBe(0);
    const raised = await db.cli(['budget', 'r1', '7', '--reason', 'worth it']);
    expect([raised.code, raised.stdout, raised.stderr]).toEqual([
      0,
      'budget of r1: $7 (spent $0.000000); it is paused: waybill resume r1 to continue\n',
      '',
    ]);
    expect((await db.cli(['resume', 'r1'])).stdout).toBe('resumed r1: it is queued\n');
    const missing = await db.cli(['budget', 'nope', '7']);
    expect([missing.code, missing.stderr]).toEqual([1, 'waybill budget: run nope not found\n']);

    expect(json(await db.cli(['inspect', 'r1', '--json'])).run.budgetUsd).toBe(7);
    const audit = db.raw((conn) =>
      conn.prepare("SELECT action, target, detail FROM audit WHERE run_id = 'r1' ORDER BY id").all(),
    );
    expect(audit).toEqual([
      { action: 'start', target: 'r1', detail: 'workflow notify; budget $2.5' },
      { action: 'pause', target: 'r1', detail: null },
      { action: 'budget', target: 'r1', detail: 'budget $2.5 → $7; reason: worth it' },
      { action: 'resume', target: 'r1', detail: null },
    ]);
  });
});
