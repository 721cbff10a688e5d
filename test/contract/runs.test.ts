/**
 * The run store's contract (RunStore: runs, workers, liveness), one suite on every backend: takeovers by a
 * passed run lease or a stopped owner, dead workers, the operators' transitions, outside clients' runs in
 * the list, and keyset paging. What only PostgreSQL can show (many claimers under SKIP LOCKED, the database
 * clock against an injected one, lost answers through a proxy) stays in test/postgres/runs.test.ts; the
 * attempt fences are in run-fence.test.ts, cancel's owner in cancel.test.ts.
 */
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { InvalidTransitionError, NotFoundError } from '../../lib/errors';
import type { ClaimRequest, RunAction, RunStatus, RunStore, Store } from '../../lib/store/contract';
import { TRANSITIONS } from '../../lib/store/shared/transitions';
import { backends, type StoreHandle } from '../support/backends';

const list = await backends();

const newRun = (id: string, workflow = 'wf', totalSteps: number | null = 3) => ({
  id,
  workflow,
  inputJson: `{"id":"${id}"}`,
  totalSteps,
});

function stepClaim(overrides: Partial<ClaimRequest>): ClaimRequest {
  return {
    idemKey: 'k',
    runId: 'run-1',
    token: randomUUID(),
    workerId: 'w1',
    step: 0,
    attempt: 1,
    leaseMs: 30_000,
    claimTtlMs: 30_000,
    ...overrides,
  };
}

describe.each(list)('run store contract on $name', (backend) => {
  let h: StoreHandle;
  let store: Store & RunStore;

  beforeEach(async () => {
    h = await backend.open();
    store = h.store;
  });
  afterEach(() => h.close());

  it('takes over a run whose lease passed, or whose owner stopped, recording `expired`; never a live one', async () => {
    await store.createRun(newRun('r1'));
    await store.createRun(newRun('r2'));
    expect(await store.claimRun({ workerId: 'w1', leaseMs: 200, workflows: ['wf'] })).toMatchObject({
      id: 'r1',
      owner: 'w1',
      attempts: 1,
    });
    expect(await store.claimRun({ workerId: 'w1', leaseMs: 60_000, workflows: ['wf'] })).toMatchObject({
      id: 'r2',
      attempts: 1,
    });
    expect(await store.claimRun({ workerId: 'w2', leaseMs: 60_000, workflows: ['wf'] })).toBeNull();

    await h.elapse(600);
    expect(await store.claimRun({ workerId: 'w2', leaseMs: 60_000, workflows: ['wf'] })).toMatchObject({
      id: 'r1',
      owner: 'w2',
      attempts: 2,
    });
    expect(await store.renewRunLease('r1', 'w1', 60_000)).toEqual({ held: false, status: 'running' });
    expect(await store.renewRunLease('r2', 'w1', 60_000)).toEqual({ held: true, status: 'running' });
    expect((await store.listEvents('r1')).map((e) => [e.outcome, e.workerId, e.detail])).toEqual([
      ['expired', 'w2', 'run lease of w1 passed or its worker died; resumed by w2'],
    ]);
    expect(await store.claimRun({ workerId: 'w3', leaseMs: 60_000, workflows: ['wf'] })).toBeNull();

    // A stopped owner gives its runs up at once, lease or not.
    await store.registerWorker({ id: 'w1', host: 'h', pid: 1 });
    await store.stopWorker('w1');
    expect(await store.claimRun({ workerId: 'w3', leaseMs: 60_000, workflows: ['wf'] })).toMatchObject({
      id: 'r2',
      owner: 'w3',
      attempts: 2,
    });
    expect((await store.listEvents('r2')).map((e) => e.detail)).toEqual([
      'run lease of w1 passed or its worker died; resumed by w3',
    ]);
    // Finished by its new owner, a run is no longer runnable by anyone.
    expect(await store.finishRun('r2', 'w3', { status: 'completed', outputJson: '"ok"' }, 2)).toBe(true);
    expect(await store.getRun('r2')).toMatchObject({ status: 'completed', owner: null, outputJson: '"ok"' });
    await h.elapse(600);
    expect(await store.claimRun({ workerId: 'w4', leaseMs: 60_000, workflows: ['wf'] })).toBeNull();
  });

  it('registers, heartbeats, stops and lists workers; proof of life is held while held, where the backend can tell', async () => {
    await store.registerWorker({ id: 'w1', host: 'h1', pid: 101, machine: 'm1', slots: 4 });
    await store.registerWorker({ id: 'w2', host: 'h2', pid: 202 });
    const [first] = (await store.listWorkers()).filter((w) => w.id === 'w1');
    expect(first).toEqual({
      id: 'w1',
      host: 'h1',
      pid: 101,
      machine: 'm1',
      startedAt: expect.any(Number),
      heartbeatAt: expect.any(Number),
      stoppedAt: null,
      slots: 4,
    });
    await h.elapse(1_100);
    await store.heartbeatWorker('w1');
    await store.stopWorker('w2');
    const workers = Object.fromEntries((await store.listWorkers()).map((w) => [w.id, w]));
    expect(Object.keys(workers).sort()).toEqual(['w1', 'w2']);
    expect(workers.w1!.heartbeatAt).toBeGreaterThan(first!.heartbeatAt);
    expect(workers.w1!.stoppedAt).toBeNull();
    expect(workers.w2).toMatchObject({ machine: null, stoppedAt: expect.any(Number), slots: null });

    // Another process's view of w1's proof of life: PostgreSQL holds a session lock, SQLite cannot tell.
    const observer = await h.reopen();
    const hold = await store.holdLiveness('w1');
    const whileHeld = await observer.livenessOf(['w1', 'never-ran']);
    await hold.release();
    // Released by closing its session, which the server notices a moment later: looked at until it has
    // (the database decides, so this is real time, a few ms).
    let afterRelease = await observer.livenessOf(['w1']);
    for (let i = 0; i < 200 && afterRelease.get('w1') === 'held'; i++) {
      await sleep(10);
      afterRelease = await observer.livenessOf(['w1']);
    }
    if (backend.name === 'postgres') {
      expect(Object.fromEntries(whileHeld)).toEqual({ w1: 'held', 'never-ran': 'free' });
      expect(Object.fromEntries(afterRelease)).toEqual({ w1: 'free' });
    } else {
      expect(Object.fromEntries(whileHeld)).toEqual({ w1: 'unknown', 'never-ran': 'unknown' });
      expect(Object.fromEntries(afterRelease)).toEqual({ w1: 'unknown' });
    }
  });

  it('markWorkerDead stops the worker and expires its claims, one `expired` event each, in doubt when taken', async () => {
    await store.registerWorker({ id: 'w1', host: 'h', pid: 1 });
    await store.createRun(newRun('run-1'));
    await store.claimRun({ workerId: 'w1', leaseMs: 60_000, workflows: ['wf'] });
    await store.claim(stepClaim({ idemKey: 'run-1:step:0', step: 0 }));
    await store.claim(stepClaim({ idemKey: 'run-1:step:1', step: 1, attempt: 4 }));
    await store.claim(stepClaim({ idemKey: 'other:0', runId: 'other', workerId: 'w2' }));

    expect(await store.markWorkerDead('w1', 'pid 1 is gone on h')).toBe(2);
    // Expired now, not deleted: the next claim of each key takes it over from the dead holder.
    const now = await h.now();
    const left = await store.listClaims({ claimTtlMs: 30_000 });
    expect(left.map((c) => [c.idemKey, c.workerId, c.leaseExpiresAt! <= now]).sort()).toEqual([
      ['other:0', 'w2', false],
      ['run-1:step:0', 'w1', true],
      ['run-1:step:1', 'w1', true],
    ]);
    const events = await store.listEvents('run-1');
    // Each event names the expired claim's attempt; no takeover yet, so no previous holder.
    expect(
      events.map((e) => [e.idemKey, e.step, e.outcome, e.workerId, e.attempt, e.previousAttempt, e.detail]).sort(),
    ).toEqual([
      [
        'run-1:step:0',
        0,
        'expired',
        'w1',
        1,
        null,
        'worker w1 died (pid 1 is gone on h); its claim expired: the step runs again, told it is in doubt',
      ],
      [
        'run-1:step:1',
        1,
        'expired',
        'w1',
        4,
        null,
        'worker w1 died (pid 1 is gone on h); its claim expired: the step runs again, told it is in doubt',
      ],
    ]);
    expect((await store.listWorkers())[0]?.stoppedAt).toEqual(expect.any(Number));
    // Its run resumes now, not after its lease; its steps can be claimed again.
    expect(await store.claimRun({ workerId: 'w2', leaseMs: 60_000, workflows: ['wf'] })).toMatchObject({
      id: 'run-1',
      owner: 'w2',
    });
    // Taken over from the dead holder: the step is told it may have run (Checkpoint's inDoubt), its next attempt.
    expect(await store.claim(stepClaim({ idemKey: 'run-1:step:1', workerId: 'w2', attempt: 5 }))).toMatchObject({
      kind: 'claimed',
      tookOverFrom: { workerId: 'w1', attempt: 4 },
    });
    expect(await store.markWorkerDead('w1', 'again')).toBe(0);
  });

  it('actOnRun allows exactly the TRANSITIONS table, and says why it refuses', async () => {
    const statuses: RunStatus[] = ['queued', 'running', 'paused', 'completed', 'failed', 'cancelled'];
    for (const action of Object.keys(TRANSITIONS) as RunAction[]) {
      for (const status of statuses) {
        const id = `${action}-${status}`;
        await store.createRun(newRun(id));
        await h.exec(
          `UPDATE runs SET status = '${status}', owner = 'w1', error = 'e', finished_at = 1 WHERE id = '${id}'`,
        );
        const { from, to } = TRANSITIONS[action];
        if (!from.includes(status)) {
          await expect(store.actOnRun(id, action, 'ann')).rejects.toThrow(
            new InvalidTransitionError(id, action, status),
          );
          expect(await store.listEvents(id)).toEqual([]);
          continue;
        }
        const row = await store.actOnRun(id, action, 'ann');
        expect(row).toMatchObject({
          id,
          status: to,
          // A running run keeps its owner until that worker lets go, unless cancelled; any other loses it.
          owner: status === 'running' && action !== 'cancel' ? 'w1' : null,
          error: to === 'queued' ? null : 'e',
          finishedAt: to === 'cancelled' ? row.updatedAt : to === 'queued' ? null : 1,
        });
        expect((await store.listEvents(id)).map((e) => [e.outcome, e.detail])).toEqual([
          ['operator', `${action} by ann: ${status} → ${to}`],
        ]);
      }
    }
    await expect(store.actOnRun('missing', 'pause', 'ann')).rejects.toBeInstanceOf(NotFoundError);
  });

  it('lists outside clients’ runs, counts orphaned claims by the claim TTL, and searches literally', async () => {
    await store.createRun(newRun('Run_50%'));
    await store.createRun(newRun('runx50a'));
    // The article's client: claims with claimed_at only, one an hour old, and progress with no runs row.
    const now = await h.now();
    await h.exec(
      `INSERT INTO claims (idem_key, run_id, claimed_at) VALUES ('art:0', 'art', ${now - 3600}), ('art:1', 'art', ${now})`,
    );
    await h.exec(`INSERT INTO progress (run_id, step, state_json, updated_at) VALUES ('art', 7, '{}', ${now - 60})`);
    await h.exec(`INSERT INTO claims (idem_key, run_id, claimed_at) VALUES ('Run_50%:0', 'Run_50%', ${now - 3600})`);

    const list = await store.listRuns({ claimTtlMs: 30_000 });
    expect(list.find((r) => r.id === 'art')).toEqual({
      id: 'art',
      workflow: 'external',
      status: 'running',
      step: 7,
      totalSteps: null,
      executed: 0,
      committed: 0,
      skipped: 0,
      awaited: 0,
      orphanedClaims: 1,
      owner: null,
      error: null,
      createdAt: null,
      updatedAt: expect.any(Number),
    });
    expect(list.find((r) => r.id === 'Run_50%')).toMatchObject({ workflow: 'wf', status: 'queued', orphanedClaims: 1 });
    // A TTL longer than the claim's age: not orphaned yet.
    expect((await store.listRuns({ claimTtlMs: 7_200_000 })).map((r) => r.orphanedClaims)).toEqual([0, 0, 0]);
    expect((await store.listRuns({ search: '_50%', claimTtlMs: 30_000 })).map((r) => r.id)).toEqual(['Run_50%']);
    expect((await store.listRuns({ search: 'RUN', claimTtlMs: 30_000 })).map((r) => r.id).sort()).toEqual([
      'Run_50%',
      'runx50a',
    ]);
    expect(await store.listRuns({ status: 'idle', claimTtlMs: 30_000 })).toEqual([]);
    await h.exec(`DELETE FROM claims WHERE run_id = 'art'`);
    expect((await store.listRuns({ status: 'idle', claimTtlMs: 30_000 })).map((r) => r.id)).toEqual(['art']);
  });

  it('lists a run’s children by parent: not grandchildren, not others, never an outside client’s run', async () => {
    await store.createRun(newRun('p'));
    await store.createRun({ ...newRun('c1'), parentRunId: 'p' });
    await store.createRun({ ...newRun('c2', 'other'), parentRunId: 'p', detached: true });
    await store.createRun({ ...newRun('g1'), parentRunId: 'c1' });
    await store.createRun(newRun('lone'));
    // Outside clients' runs: one claimed, one with progress only.
    const now = await h.now();
    await h.exec(`INSERT INTO claims (idem_key, run_id, claimed_at) VALUES ('x:0', 'x', ${now})`);
    await h.exec(`INSERT INTO progress (run_id, step, state_json, updated_at) VALUES ('y', 1, '{}', ${now})`);
    const ids = async (filter: Partial<Parameters<RunStore['listRuns']>[0]>) =>
      (await store.listRuns({ claimTtlMs: 30_000, ...filter })).map((r) => r.id).sort();
    expect(await ids({ parent: 'p' })).toEqual(['c1', 'c2']);
    expect(await ids({ parent: 'c1' })).toEqual(['g1']);
    expect(await ids({ parent: 'p', workflow: 'other' })).toEqual(['c2']);
    expect(await ids({ parent: 'p', search: '1' })).toEqual(['c1']);
    expect(await ids({ parent: 'lone' })).toEqual([]);
    expect(await ids({ parent: 'x' })).toEqual([]);
    expect(await ids({ parent: 'p', workflow: 'external' })).toEqual([]);
    // Paged by the same cursor as the unfiltered list.
    const [first] = await store.listRuns({ claimTtlMs: 30_000, parent: 'p', limit: 1 });
    const rest = await store.listRuns({
      claimTtlMs: 30_000,
      parent: 'p',
      after: { updatedAt: first!.updatedAt, id: first!.id },
    });
    expect([first!.id, ...rest.map((r) => r.id)].sort()).toEqual(['c1', 'c2']);
  });

  it('pages by (updatedAt, id): ties in time ordered bytewise by id, no gaps or repeats', async () => {
    for (const id of ['b', 'B', 'a', 'C', 'c', 'A', 'later']) await store.createRun(newRun(id));
    await h.exec(`UPDATE runs SET updated_at = 1000.123456789 WHERE id <> 'later'`);
    const seen: string[] = [];
    let after: { updatedAt: number; id: string } | undefined;
    for (let page = 0; page < 10; page++) {
      const rows = await store.listRuns({ limit: 2, claimTtlMs: 30_000, after });
      seen.push(...rows.map((r) => r.id));
      if (rows.length < 2) break;
      after = { updatedAt: rows[1]!.updatedAt, id: rows[1]!.id };
    }
    expect(seen).toEqual(['later', 'A', 'B', 'C', 'a', 'b', 'c']);
  });

  // The runs rows' top is read first, and progress only down to its last time, or not at all when it is short
  // (sqlite/run-list.ts CANDIDATES): a run whose progress is newer than its row still takes its place.
  it('pages runs by their progress when it is newer than their row, with a status filter or none', async () => {
    for (let i = 0; i < 8; i++) await store.createRun(newRun(`p${i}`));
    await h.exec(`UPDATE runs SET updated_at = 1000 + CAST(substr(id, 2) AS INTEGER)`);
    await h.exec(`UPDATE runs SET status = 'cancelled', updated_at = 1010 WHERE id = 'p6'`);
    await h.exec(`INSERT INTO progress (run_id, step, state_json, updated_at) VALUES
      ('p1', 1, '{}', 1030), ('p4', 1, '{}', 1020), ('p2', 1, '{}', 1006), ('p0', 1, '{}', 500)`);
    const newest = ['p1', 'p4', 'p6', 'p7', 'p2', 'p5', 'p3', 'p0'];
    const statusOf = (id: string) => (id === 'p6' ? 'cancelled' : 'queued');
    for (const status of [undefined, 'queued', 'cancelled', 'failed'] as const) {
      const want = newest.filter((id) => !status || statusOf(id) === status);
      for (const limit of [1, 2, 3, 5, 20]) {
        const seen: string[] = [];
        let after: { updatedAt: number; id: string } | undefined;
        for (let page = 0; page < 20; page++) {
          const rows = await store.listRuns({ limit, claimTtlMs: 30_000, after, status });
          seen.push(...rows.map((r) => r.id));
          if (rows.length < limit) break;
          after = { updatedAt: rows.at(-1)!.updatedAt, id: rows.at(-1)!.id };
        }
        expect(seen, `status ${status}, limit ${limit}`).toEqual(want);
      }
    }
  });

  it('listRunHeads reads one status of runs rows, newest first, by workflow and limit; never an outside client’s run', async () => {
    for (const [id, workflow] of [
      ['q1', 'a'],
      ['q2', 'b'],
      ['q3', 'a'],
      ['r1', 'a'],
    ] as const)
      await store.createRun(newRun(id, workflow));
    await h.exec(`UPDATE runs SET updated_at = 1000 + CASE id WHEN 'q1' THEN 1 WHEN 'q2' THEN 3 ELSE 2 END`);
    await h.exec(`UPDATE runs SET status = 'running', owner = 'w1', lease_expires_at = 5000 WHERE id = 'r1'`);
    // An outside client's claimed run reads as running in listRuns: no runs row, no head.
    await h.exec(`INSERT INTO claims (idem_key, run_id, claimed_at) VALUES ('x:0', 'x', ${await h.now()})`);
    const ids = async (filter: Parameters<RunStore['listRunHeads']>[0]) =>
      (await store.listRunHeads(filter)).map((r) => r.id);
    expect(await ids({ status: 'queued', limit: 10 })).toEqual(['q2', 'q3', 'q1']);
    expect(await ids({ status: 'queued', limit: 2 })).toEqual(['q2', 'q3']);
    expect(await ids({ status: 'queued', workflows: ['a'], limit: 10 })).toEqual(['q3', 'q1']);
    expect(await ids({ status: 'queued', workflows: [], limit: 10 })).toEqual([]);
    expect(await store.listRunHeads({ status: 'running', limit: 10 })).toEqual([
      { id: 'r1', workflow: 'a', status: 'running', owner: 'w1', leaseExpiresAt: 5000 },
    ]);
  });

  it('figures a run’s executed rows as its committed rows of source `executed`, resolved and forked ones apart', async () => {
    await store.createRun(newRun('f1'));
    const rows = [
      ['f1:0', 'executed'],
      ['f1:1', 'executed'],
      ['f1:2', 'manual'],
      ['f1:3', 'forked'],
    ];
    for (const [i, [key, source]] of rows.entries())
      await h.exec(`INSERT INTO committed (idem_key, run_id, result_json, committed_at, step, source)
        VALUES ('${key}', 'f1', 'null', ${await h.now()}, ${i}, '${source}')`);
    const [run] = await store.listRuns({ claimTtlMs: 30_000 });
    expect(run).toMatchObject({ id: 'f1', committed: 4, executed: 2 });
  });
});
