/**
 * The wait store's contract (WaitStore, and the runs list's `waiting` filter), one suite on every backend: a
 * decision wakes its parked run once, in its transaction, and says so in this process only after commit; the
 * claim takes a parked run when its wait comes due and not before; nextWakeIn names the first wait ahead and
 * nothing a worker cannot take; the waiting summary names each kind's oldest wait; the list filters by kind.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Store, WaitKind } from '../../lib/store/contract';
import { backends, type StoreHandle } from '../support/backends';

const list = await backends();

describe.each(list)('wait store contract on $name', (backend) => {
  let h: StoreHandle;
  let store: Store;

  beforeEach(async () => {
    h = await backend.open();
    store = h.store;
  });
  afterEach(() => h.close());

  /** A run taken by a worker, at a wait it recorded, parked there. */
  async function parked(
    id: string,
    kind: WaitKind,
    options: { name?: string; dueInMs?: number; workflow?: string } = {},
  ): Promise<void> {
    const workflow = options.workflow ?? 'wf';
    await store.createRun({ id, workflow, inputJson: '{}', totalSteps: null });
    const taken = await store.claimRun({ workerId: 'w1', leaseMs: 60_000, workflows: [workflow], runId: id });
    const name = options.name ?? kind;
    await store.recordWait({ runId: id, name, kind, dueInMs: options.dueInMs ?? null });
    expect(await store.parkRun(id, kind, name, 'w1', taken!.attempts)).toBe('parked');
  }

  const decision = (runId: string, name: string, by: string) => ({
    runId,
    name,
    kind: 'approval' as const,
    decisionJson: JSON.stringify({ approved: true }),
    decidedBy: by,
  });

  it('a decision wakes its parked run once, and announces it in this process only after it committed', async () => {
    await parked('r1', 'approval', { name: 'review' });
    const other = await h.reopen();
    const heard: { runId: string; status: string | undefined }[] = [];
    const pending: Promise<void>[] = [];
    const unsubscribe = store.onLocalWake((runId) => {
      // Read through another connection: a listener that sees `queued` there is told after the commit.
      pending.push(
        other.getRun(runId).then((run) => {
          heard.push({ runId, status: run?.status });
        }),
      );
    });
    try {
      const first = await store.decideWait(decision('r1', 'review', 'alice'));
      const second = await other.decideWait(decision('r1', 'review', 'bob'));
      await Promise.all(pending);
      expect([first.decided, second.decided, second.wait.decidedBy]).toEqual([true, false, 'alice']);
      expect(heard).toEqual([{ runId: 'r1', status: 'queued' }]);
      const run = (await store.getRun('r1'))!;
      expect([run.status, run.owner, run.leaseExpiresAt]).toEqual(['queued', null, null]);
      expect((await store.listEvents('r1')).filter((e) => e.outcome === 'operator').map((e) => e.detail)).toEqual([
        'approval review approved by alice',
      ]);
    } finally {
      unsubscribe();
    }
  });

  it('a decision that finds its run not parked (a signal sent ahead, a paused run) wakes nothing', async () => {
    const woken: string[] = [];
    const unsubscribe = store.onLocalWake((runId) => woken.push(runId));
    try {
      await store.createRun({ id: 'ahead', workflow: 'wf', inputJson: '{}', totalSteps: null });
      const sent = await store.decideWait({
        runId: 'ahead',
        name: 'go',
        kind: 'signal',
        decisionJson: JSON.stringify({ payload: 1 }),
        decidedBy: 'alice',
        createIfAbsent: true,
      });
      expect(sent.decided).toBe(true);
      expect((await store.getRun('ahead'))!.status).toBe('queued');

      await parked('paused', 'approval', { name: 'review' });
      await store.actOnRun('paused', 'pause', 'alice');
      expect((await store.decideWait(decision('paused', 'review', 'alice'))).decided).toBe(true);
      expect((await store.getRun('paused'))!.status).toBe('paused');
      expect(woken).toEqual([]);
    } finally {
      unsubscribe();
    }
  });

  it('the claim takes a parked run when its wait comes due, not before, and a decided wait never again', async () => {
    await parked('nap', 'sleep', { dueInMs: 5000 });
    const claim = () => store.claimRun({ workerId: 'w2', leaseMs: 60_000, workflows: ['wf'] });
    expect(await claim()).toBeNull();
    await h.elapse(4000);
    expect(await claim()).toBeNull();
    await h.elapse(1500);
    const taken = await claim();
    expect([taken?.id, taken?.status]).toEqual(['nap', 'running']);
    // The run decides its own due wait (engine/waits.ts) and parks at the next one, which has no due time.
    await store.decideWait({
      runId: 'nap',
      name: 'sleep',
      kind: 'sleep',
      decisionJson: '{"slept":true}',
      decidedBy: 'timeout',
    });
    await store.recordWait({ runId: 'nap', name: 'then', kind: 'approval' });
    expect(await store.parkRun('nap', 'approval', 'then', 'w2', taken!.attempts)).toBe('parked');
    await h.elapse(60_000);
    expect(await claim()).toBeNull();
  });

  it('nextWakeIn: the first open wait ahead of a waiting run of these workflows; nothing long due or not takeable', async () => {
    const next = (workflows = ['wf'], runId?: string) => store.nextWakeIn({ workflows, runId });
    expect(await next()).toBeNull();
    await parked('approval-only', 'approval');
    expect(await next()).toBeNull();

    await parked('later', 'sleep', { dueInMs: 90_000 });
    await parked('sooner', 'signal', { dueInMs: 60_000 });
    await parked('elsewhere', 'sleep', { dueInMs: 10_000, workflow: 'other' });
    const sooner = (await next())!;
    // The store's clock: exact on SQLite's ManualClock; the database's, ticking, on PostgreSQL.
    expect(sooner).toBeGreaterThan(55_000);
    expect(sooner).toBeLessThanOrEqual(60_000);
    expect(await next(['other'])).toBeLessThanOrEqual(10_000);
    expect(await next(['wf'], 'later')).toBeGreaterThan(85_000);
    expect(await next(['nothing-served'])).toBeNull();

    // Decided (an approval answered before its timeout), paused or cancelled: not a reason to wake.
    await store.decideWait({
      runId: 'sooner',
      name: 'signal',
      kind: 'signal',
      decisionJson: '{"payload":1}',
      decidedBy: 'alice',
    });
    expect(await next()).toBeGreaterThan(85_000);
    await store.actOnRun('later', 'pause', 'alice');
    expect(await next()).toBeNull();
    await store.actOnRun('later', 'resume', 'alice');
    await store.actOnRun('later', 'cancel', 'alice');
    expect(await next()).toBeNull();

    // Due already: the claim's to take now. Come due since the caller's claim looked (sinceMs ago): 0, look again
    // at once. Due before that: the claim saw it and could not take it, never a wake-up an idle worker spins on.
    await parked('due-soon', 'sleep', { dueInMs: 1000 });
    expect(await next()).toBeLessThanOrEqual(1000);
    await h.elapse(1500);
    expect(await next()).toBeNull();
    expect(await store.nextWakeIn({ workflows: ['wf'], sinceMs: 10_000 })).toBe(0);
    await h.elapse(20_000);
    expect(await store.nextWakeIn({ workflows: ['wf'], sinceMs: 10_000 })).toBeNull();
  });

  it('the waiting summary counts runs by kind and names the oldest wait of each: run, name, since when', async () => {
    expect(await store.waitingSummary()).toEqual([]);
    await parked('first', 'approval', { name: 'review' });
    await h.elapse(2000);
    await parked('second', 'approval', { name: 'sign-off' });
    await parked('nap', 'sleep', { dueInMs: 600_000 });
    await h.elapse(1000);
    const created = (await store.getWait('first', 'approval', 'review'))!.createdAt;
    const summary = await store.waitingSummary();
    expect(summary.map(({ ageSeconds: _, ...rest }) => rest)).toEqual([
      { kind: 'approval', runs: 2, oldestAt: created, oldestRunId: 'first', oldestName: 'review' },
      {
        kind: 'sleep',
        runs: 1,
        oldestAt: (await store.getWait('nap', 'sleep', 'sleep'))!.createdAt,
        oldestRunId: 'nap',
        oldestName: 'sleep',
      },
    ]);
    expect(summary[0]!.ageSeconds).toBeGreaterThanOrEqual(3);
    expect(summary[0]!.ageSeconds).toBeLessThan(30);

    // Decided, the oldest gives way to the next; a run that is not waiting is not counted.
    await store.decideWait(decision('first', 'review', 'alice'));
    expect((await store.waitingSummary())[0]).toMatchObject({
      kind: 'approval',
      runs: 1,
      oldestRunId: 'second',
      oldestName: 'sign-off',
    });
    await store.actOnRun('second', 'pause', 'alice');
    expect((await store.waitingSummary()).map((w) => w.kind)).toEqual(['sleep']);
  });

  it('the runs list filters by what a waiting run waits for; never outside runs; with another status, nothing', async () => {
    await parked('ask-1', 'approval', { name: 'review' });
    await parked('ask-2', 'approval', { name: 'review', workflow: 'other' });
    await parked('hook', 'signal', { name: 'settled' });
    await parked('nap', 'sleep', { dueInMs: 600_000 });
    // Queued again by its decision: not waiting for anything any more.
    await parked('answered', 'approval', { name: 'review' });
    await store.decideWait(decision('answered', 'review', 'alice'));
    await store.createRun({ id: 'plain', workflow: 'wf', inputJson: '{}', totalSteps: null });
    await h.insertOutsideClaim('outside:step:0', 'outside');

    const ids = async (filter: Omit<Parameters<Store['listRuns']>[0], 'claimTtlMs'>) =>
      (await store.listRuns({ claimTtlMs: 30_000, ...filter })).map((r) => r.id).sort();
    expect(await ids({ waiting: 'approval' })).toEqual(['ask-1', 'ask-2']);
    expect(await ids({ waiting: 'signal' })).toEqual(['hook']);
    expect(await ids({ waiting: 'sleep' })).toEqual(['nap']);
    expect(await ids({ waiting: 'approval', status: 'waiting' })).toEqual(['ask-1', 'ask-2']);
    expect(await ids({ waiting: 'approval', status: 'queued' })).toEqual([]);
    expect(await ids({ waiting: 'approval', status: 'idle' })).toEqual([]);
    expect(await ids({ waiting: 'approval', workflow: 'other' })).toEqual(['ask-2']);
    expect(await ids({ waiting: 'approval', workflow: 'external' })).toEqual([]);
    expect(await ids({ waiting: 'approval', search: 'k-1' })).toEqual(['ask-1']);
    expect(await ids({ status: 'waiting' })).toEqual(['ask-1', 'ask-2', 'hook', 'nap']);
    expect((await ids({})).length).toBe(7);

    // Keyset pages of one.
    const first = await store.listRuns({ claimTtlMs: 30_000, waiting: 'approval', limit: 1 });
    const after = { updatedAt: first[0]!.updatedAt, id: first[0]!.id };
    const second = await store.listRuns({ claimTtlMs: 30_000, waiting: 'approval', limit: 1, after });
    const third = await store.listRuns({
      claimTtlMs: 30_000,
      waiting: 'approval',
      limit: 1,
      after: { updatedAt: second[0]!.updatedAt, id: second[0]!.id },
    });
    expect([...first, ...second].map((r) => r.id).sort()).toEqual(['ask-1', 'ask-2']);
    expect(third).toEqual([]);
  });
});
