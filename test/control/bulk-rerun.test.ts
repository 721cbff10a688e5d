/**
 * Bulk rerun from a step (lib/control/bulk.ts over lib/control/rewind.ts), on every backend: over a filter and
 * over a page's selection, by step number and by step name. Every run it applies to is rerun once (its results
 * from the step on moved to history, one audit line); every run it does not apply to is skipped with its reason
 * — running, past its last step, without that step name, an outside client's, a live claim — and left exactly
 * as it was.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { bulk, type Caller, type ControlDeps, type ControlStore } from '../../lib/control';
import { backends, type StoreHandle } from '../support/backends';

const list = await backends();
const OPERATOR: Caller = { actor: 'olga (operator)', role: 'operator', channel: 'api' };

describe.each(list)('bulk rerun on $name', (backend) => {
  let h: StoreHandle;
  let store: ControlStore;
  let deps: ControlDeps;

  beforeEach(async () => {
    h = await backend.open();
    store = h.store;
    deps = { store: async () => store, claimTtlMs: 30_000, maxBytes: 10_000 };
  });
  afterEach(() => h.close());

  /** A run of `count` committed steps keyed as runAgent keys them, in `status`. */
  async function seed(id: string, status: string, count: number, workflow = 'batch') {
    const now = await h.now();
    await h.exec(`INSERT INTO runs (id, workflow, input_json, status, total_steps, attempts, created_at, updated_at)
      VALUES ('${id}', '${workflow}', '{}', '${status}', ${count}, 1, ${now}, ${now})`);
    await h.exec(`INSERT INTO progress (run_id, step, state_json, updated_at, executed, skipped, awaited)
      VALUES ('${id}', ${count}, '{"processed":${count}}', ${now}, ${count}, 0, 0)`);
    for (let n = 0; n < count; n++) {
      await h.exec(`INSERT INTO committed (idem_key, run_id, result_json, committed_at, step, worker_id, duration_ms, source,
        prior_step, prior_state_json)
        VALUES ('${id}:step:${n}', '${id}', '{"n":${n}}', ${now}, ${n}, 'w1', 5, 'executed', ${n}, '{"processed":${n}}')`);
    }
  }

  /** Every row the rerun could touch, for the runs it must leave alone. */
  async function rows(id: string) {
    return JSON.stringify({
      run: await store.getRun(id),
      progress: await store.loadProgress(id),
      committed: await store.listCommitted(id, { limit: 100 }),
      history: (await Promise.all([0, 1, 2, 3, 4, 5].map((n) => store.readStep(id, n)))).map((r) => r.history),
      events: await store.listEvents(id, { limit: 100 }),
    });
  }

  it('reruns every run the filter matches that it applies to, skips the rest with their reasons, one audit line each', async () => {
    for (const id of ['c1', 'c2', 'c3']) await seed(id, 'completed', 6);
    await seed('f1', 'failed', 6);
    await seed('p1', 'paused', 6);
    await seed('run', 'running', 6);
    await seed('short', 'completed', 3);
    await seed('held', 'paused', 6);
    const now = await h.now();
    await h.exec(`INSERT INTO claims (idem_key, run_id, claimed_at, token, worker_id, lease_expires_at, heartbeat_at, step, attempt)
      VALUES ('held:step:5', 'held', ${now}, 't', 'w9', ${now + 600}, ${now}, 5, 1)`);
    // An outside client's run: committed rows and no runs row. Listed (idle), never rerun.
    await h.exec(`INSERT INTO committed (idem_key, run_id, result_json, committed_at, step, source)
      VALUES ('ext:step:4', 'ext', '1', ${now}, 4, 'executed')`);
    // Another workflow, outside the filter: not even matched.
    await seed('other', 'completed', 6, 'elsewhere');
    const untouched = Object.fromEntries(
      await Promise.all(['run', 'short', 'held', 'ext', 'other'].map(async (id) => [id, await rows(id)])),
    );

    expect(await bulk.preview(deps, OPERATOR, { filter: { workflow: 'batch' }, fromStep: 4 })).toMatchObject({
      matched: 8,
      // By status and last step: c1-c3, f1, p1, held (whose live claim only the store sees).
      applicable: { rerun: 6 },
    });
    const report = await bulk.apply(deps, OPERATOR, {
      action: 'rerun',
      filter: { workflow: 'batch' },
      fromStep: 4,
      reason: 'model v2',
    });
    expect([report.matched, report.done]).toEqual([8, 5]);
    expect(Object.fromEntries(report.skipped.map((s) => [s.id, s.reason]))).toEqual({
      run: 'is running: rerun applies to completed, failed, cancelled, paused runs (pause it first)',
      short: 'step 4 is beyond its last step (2)',
      held: expect.stringContaining('run held has a live claim on held:step:5 (held by w9)'),
    });
    for (const id of ['c1', 'c2', 'c3', 'f1', 'p1']) {
      expect((await store.getRun(id))?.status).toBe('queued');
      expect((await store.listCommitted(id, { limit: 100 })).map((r) => r.step)).toEqual([0, 1, 2, 3]);
      expect([(await store.readStep(id, 4)).history.length, (await store.readStep(id, 5)).history.length]).toEqual([
        1, 1,
      ]);
      // The map as it was when step 4 was reached, not the latest.
      expect(await store.loadProgress(id)).toMatchObject({ step: 4, stateJson: '{"processed":4}' });
    }
    for (const [id, before] of Object.entries(untouched)) expect([id, await rows(id)]).toEqual([id, before]);
    const audit = await store.listAudit({ limit: 100 });
    expect(audit.map((a) => a.target).sort()).toEqual(['c1', 'c2', 'c3', 'f1', 'p1']);
    expect(new Set(audit.map((a) => `${a.action} ${a.actor} ${a.detail}`))).toEqual(
      new Set([
        'rerun olga (operator) bulk rerun from step 4 of runs matching workflow=batch: rerun 1 from step 4: 2 results moved to history, state as it was at step 4; reason: model v2',
      ]),
    );
  });

  it('a filter matching outside clients skips them; a selection by ids reruns those runs, by step name', async () => {
    await seed('a', 'completed', 6);
    await seed('b', 'failed', 6);
    await seed('c', 'completed', 6);
    const now = await h.now();
    await h.exec(`INSERT INTO committed (idem_key, run_id, result_json, committed_at, step, source)
      VALUES ('ext:step:0', 'ext', '1', ${now}, 0, 'executed')`);
    const ext = await bulk.apply(deps, OPERATOR, { action: 'rerun', filter: { q: 'ext' }, fromStep: 0 });
    expect(ext).toEqual({
      matched: 1,
      done: 0,
      skipped: [{ id: 'ext', reason: "an outside client's run: it has no workflow to run it again" }],
    });

    // A name: runAgent's key tail (`step:2`) stands for step 2 in each run; `zz` has no step of that name.
    await seed('zz', 'completed', 2);
    await h.exec(`DELETE FROM committed WHERE run_id = 'zz'`);
    await h.exec(`INSERT INTO committed (idem_key, run_id, result_json, committed_at, step, source)
      VALUES ('zz:other', 'zz', '1', ${now}, 0, 'executed')`);
    const c = await rows('c');
    const report = await bulk.apply(deps, OPERATOR, {
      action: 'rerun',
      ids: ['a', 'b', 'zz', 'nobody', 'a'],
      fromStep: 'step:2',
    });
    expect([report.matched, report.done]).toEqual([4, 2]);
    expect(Object.fromEntries(report.skipped.map((s) => [s.id, s.reason]))).toEqual({
      nobody: expect.stringContaining('run nobody has no runs row'),
      zz: expect.stringContaining('fromStep "step:2": run zz has no step of that name'),
    });
    for (const id of ['a', 'b']) {
      expect((await store.listCommitted(id, { limit: 100 })).map((r) => r.step)).toEqual([0, 1]);
      expect(await store.loadProgress(id)).toMatchObject({ step: 2, stateJson: '{"processed":2}' });
    }
    expect(await rows('c')).toBe(c);
    expect((await store.listAudit({ limit: 100 })).map((a) => [a.target, a.detail])).toEqual(
      expect.arrayContaining([
        [
          'a',
          'bulk rerun from "step:2" of 4 selected runs: rerun 1 from step 2 (step:2): 4 results moved to history, state as it was at step 2',
        ],
        [
          'b',
          'bulk rerun from "step:2" of 4 selected runs: rerun 1 from step 2 (step:2): 4 results moved to history, state as it was at step 2',
        ],
      ]),
    );
    expect((await store.listAudit({ limit: 100 })).length).toBe(2);
  });
});
