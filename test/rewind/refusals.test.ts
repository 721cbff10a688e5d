/**
 * Rerun, fork and the step read through lib/control on both backends: every refusal names what is wrong and
 * leaves the store exactly as it was (runs, progress, committed, history, claims, events, audit), and the
 * step view counts a step's attempts from the rows the protocol already writes.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { type Caller, type ControlDeps, rewind, steps } from '../../lib/control';
import { defineWorkflow, WorkflowRegistry } from '../../lib/engine/workflow';
import { ControlInputError, ForbiddenError, RewindRefusedError, StartRefusedError } from '../../lib/errors';
import { backends, type StoreHandle } from '../support/backends';

const list = await backends();
const OPERATOR: Caller = { actor: 'olga (operator)', role: 'operator', channel: 'api' };
const VIEWER: Caller = { actor: 'vera (viewer)', role: 'viewer', channel: 'api' };
const counter = defineWorkflow({
  name: 'counter',
  input: z.strictObject({ count: z.number().int().min(1) }),
  totalSteps: (i) => i.count,
  async run() {},
});

describe.each(list)('rerun and fork refusals on $name', (backend) => {
  let h: StoreHandle;
  let deps: ControlDeps;

  beforeEach(async () => {
    h = await backend.open();
    deps = {
      store: async () => h.store,
      claimTtlMs: 30_000,
      maxBytes: 10_000,
      workflows: async () => new WorkflowRegistry([counter]),
    };
  });
  afterEach(() => h.close());

  /** A run of `steps` committed steps in `status`, keyed as runAgent keys them. */
  async function seed(id: string, status: string, count = 5) {
    const now = await h.now();
    await h.exec(`INSERT INTO runs (id, workflow, input_json, status, total_steps, attempts, created_at, updated_at)
      VALUES ('${id}', 'counter', '{"count":${count}}', '${status}', ${count}, 1, ${now}, ${now})`);
    await h.exec(`INSERT INTO progress (run_id, step, state_json, updated_at, executed, skipped, awaited)
      VALUES ('${id}', ${count}, '{"processed":${count}}', ${now}, ${count}, 0, 0)`);
    for (let n = 0; n < count; n++) {
      await h.exec(`INSERT INTO committed (idem_key, run_id, result_json, committed_at, step, worker_id, duration_ms, source)
        VALUES ('${id}:step:${n}', '${id}', '{"n":${n}}', ${now}, ${n}, 'w1', 12.5, 'executed')`);
    }
  }

  async function dump() {
    const s = h.store;
    const runs = ['r', 'live', 'run2', 'ext', 'hash', 'taken'];
    return JSON.stringify({
      runs: await Promise.all(runs.map((id) => s.getRun(id))),
      progress: await Promise.all(runs.map((id) => s.loadProgress(id))),
      committed: await Promise.all(runs.map((id) => s.listCommitted(id, { limit: 100 }))),
      steps: await Promise.all(runs.flatMap((id) => [0, 1, 2, 3, 4].map((n) => s.readStep(id, n)))),
      events: await Promise.all(runs.map((id) => s.listEvents(id, { limit: 100 }))),
      audit: await s.listAudit(),
    });
  }

  it('refuses each bad request with a clear error naming the field or the reason, and changes nothing', async () => {
    await seed('r', 'completed');
    await seed('run2', 'running');
    await seed('live', 'failed');
    await seed('taken', 'completed', 1);
    const now = await h.now();
    await h.exec(`INSERT INTO claims (idem_key, run_id, claimed_at, token, worker_id, lease_expires_at, heartbeat_at, step, attempt)
      VALUES ('live:step:4', 'live', ${now}, 't', 'w9', ${now + 600}, ${now}, 4, 1)`);
    // An outside client's run: committed rows, no runs row.
    await h.exec(
      `INSERT INTO committed (idem_key, run_id, result_json, committed_at, step, source) VALUES ('ext:step:0', 'ext', '1', ${now}, 0, 'executed')`,
    );
    // A run whose key is a content hash: a fork would share it.
    await seed('hash', 'completed', 1);
    await h.exec(`UPDATE committed SET idem_key = 'c0ffee' WHERE run_id = 'hash'`);
    const before = await dump();

    const cases: [string, () => Promise<unknown>, unknown, RegExp][] = [
      ['viewer', () => rewind.rerun(deps, VIEWER, { runId: 'r', fromStep: 1 }), ForbiddenError, /operator/],
      [
        'negative step',
        () => rewind.rerun(deps, OPERATOR, { runId: 'r', fromStep: -1 }),
        ControlInputError,
        /fromStep/,
      ],
      [
        'fractional step',
        () => rewind.fork(deps, OPERATOR, { runId: 'r', fromStep: 1.5 }),
        ControlInputError,
        /fromStep/,
      ],
      [
        'unknown field',
        () => rewind.rerun(deps, OPERATOR, { runId: 'r', fromStep: 1, form: 2 } as never),
        ControlInputError,
        /form/,
      ],
      [
        'bad fork id',
        () => rewind.fork(deps, OPERATOR, { runId: 'r', fromStep: 1, id: 'no spaces' }),
        ControlInputError,
        /\bid\b/,
      ],
      [
        'input off schema',
        () => rewind.rerun(deps, OPERATOR, { runId: 'r', fromStep: 1, input: { count: 'x' } }),
        StartRefusedError,
        /input\.count/,
      ],
      [
        'fork input off schema',
        () => rewind.fork(deps, OPERATOR, { runId: 'r', fromStep: 1, input: { count: 0 } }),
        StartRefusedError,
        /input\.count/,
      ],
      [
        'running',
        () => rewind.rerun(deps, OPERATOR, { runId: 'run2', fromStep: 1 }),
        RewindRefusedError,
        /running \(pause it first\)/,
      ],
      [
        'beyond last',
        () => rewind.rerun(deps, OPERATOR, { runId: 'r', fromStep: 5 }),
        RewindRefusedError,
        /beyond run r's last step \(4\)/,
      ],
      [
        'fork beyond last',
        () => rewind.fork(deps, OPERATOR, { runId: 'r', fromStep: 9 }),
        RewindRefusedError,
        /beyond/,
      ],
      [
        'live claim',
        () => rewind.rerun(deps, OPERATOR, { runId: 'live', fromStep: 1 }),
        RewindRefusedError,
        /live claim on live:step:4/,
      ],
      [
        'outside client',
        () => rewind.rerun(deps, OPERATOR, { runId: 'ext', fromStep: 0 }),
        RewindRefusedError,
        /outside client/,
      ],
      [
        'fork outside client',
        () => rewind.fork(deps, OPERATOR, { runId: 'ext', fromStep: 0 }),
        RewindRefusedError,
        /outside client/,
      ],
      [
        'fork shared key',
        () => rewind.fork(deps, OPERATOR, { runId: 'hash', fromStep: 0 }),
        RewindRefusedError,
        /does not embed the run id/,
      ],
      [
        'fork id taken',
        () => rewind.fork(deps, OPERATOR, { runId: 'r', fromStep: 1, id: 'taken' }),
        RewindRefusedError,
        /run taken already exists/,
      ],
      ['step read, bad step', () => steps.read(deps, VIEWER, { runId: 'r', step: -2 }), ControlInputError, /step/],
    ];
    for (const [what, call, type, message] of cases) {
      const error = await call().then(
        () => null,
        (e: unknown) => e,
      );
      expect([what, error instanceof (type as new () => Error), (error as Error | null)?.message]).toEqual([
        what,
        true,
        expect.stringMatching(message),
      ]);
    }
    expect(await dump()).toBe(before);
  });

  it('a rerun moves steps ≥ N to history and queues the run; a second rerun numbers itself 2', async () => {
    await seed('r', 'failed');
    const first = await rewind.rerun(deps, OPERATOR, { runId: 'r', fromStep: 3, reason: 'bad answer' });
    expect(first).toMatchObject({ moved: 2, rerun: 1, run: { status: 'queued', error: null } });
    expect((await h.store.loadProgress('r'))?.step).toBe(3);
    expect((await h.store.listCommitted('r', { limit: 10 })).map((c) => c.step)).toEqual([0, 1, 2]);
    await h.exec(`UPDATE runs SET status = 'completed' WHERE id = 'r'`);
    const second = await rewind.rerun(deps, OPERATOR, { runId: 'r', fromStep: 1, input: { count: 5 } });
    expect(second).toMatchObject({ moved: 2, rerun: 2 });
    const view = await steps.read(deps, VIEWER, { runId: 'r', step: 4 });
    expect(view).toMatchObject({
      key: 'r:step:4',
      status: 'not_committed',
      history: [
        { rerun: 1, supersededBy: 'olga (operator)', reason: 'bad answer', result: { n: 4 }, replacedBy: null },
      ],
    });
    expect((await h.store.listAudit({ runId: 'r' })).map((a) => a.detail)).toEqual([
      // Rows written by hand record no prior progress: the state is kept, and the audit line says so.
      'rerun 2 from step 1: 2 results moved to history, input edited, state kept as it is (none recorded at that step)',
      'rerun 1 from step 3: 2 results moved to history, state kept as it is (none recorded at that step); reason: bad answer',
    ]);
  });

  it('a worker of the earlier execution whose claim was orphaned cannot commit into the rerun', async () => {
    await seed('r', 'failed', 3);
    await h.exec(`DELETE FROM committed WHERE idem_key = 'r:step:2'`);
    const now = await h.now();
    // Its lease passed long ago, but it was never taken over: before the rerun, its token could still commit.
    await h.exec(`INSERT INTO claims (idem_key, run_id, claimed_at, token, worker_id, lease_expires_at, heartbeat_at, step, attempt)
      VALUES ('r:step:2', 'r', ${now - 600}, 'stale', 'w-old', ${now - 500}, ${now - 600}, 2, 1)`);
    await rewind.rerun(deps, OPERATOR, { runId: 'r', fromStep: 1 });
    const late = await h.store
      .commit({
        idemKey: 'r:step:2',
        token: 'stale',
        runId: 'r',
        resultJson: '"late"',
        step: 2,
        fingerprint: null,
        workerId: 'w-old',
        durationMs: 1,
      })
      .then(
        () => 'committed',
        (e: Error) => e.name,
      );
    expect(late).toBe('LeaseLostError');
    expect(await h.store.getCommitted('r:step:2')).toBeNull();
    expect((await h.store.readStep('r', 1)).history).toHaveLength(1);
    expect(await h.store.listClaims({ runId: 'r', claimTtlMs: 30_000 })).toEqual([]);
  });

  it('the step view shows a step that failed twice then succeeded as three attempts with their errors', async () => {
    await seed('r', 'completed');
    for (const [i, error] of ['model timed out', 'HTTP 503 from model'].entries()) {
      await h.store.recordEvent({
        runId: 'r',
        idemKey: 'r:step:2',
        step: 2,
        outcome: 'failed',
        workerId: `w${i}`,
        detail: error,
      });
    }
    const view = await steps.read(deps, VIEWER, { runId: 'r', step: 2 });
    expect(view.attempts.map((a) => [a.n, a.outcome, a.workerId, a.error])).toEqual([
      [1, 'failed', 'w0', 'model timed out'],
      [2, 'failed', 'w1', 'HTTP 503 from model'],
      [3, 'committed', 'w1', null],
    ]);
    expect(view.result).toEqual({ n: 2 });
    await expect(steps.read(deps, VIEWER, { runId: 'nobody', step: 0 })).rejects.toThrow(
      'step 0 of run nobody not found',
    );
    // The trace reads its window only: steps 1–2 are two failures and two commits.
    const bars = await h.store.readTrace('r', 1, 2);
    expect(bars.map((b) => [b.step, b.outcome]).sort()).toEqual([
      [1, 'committed'],
      [2, 'committed'],
      [2, 'failed'],
      [2, 'failed'],
    ]);
  });
});
