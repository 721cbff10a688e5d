/**
 * Runs and workers on PostgreSQL (lib/store/postgres/runs.ts), what only PostgreSQL can show: the same answers as
 * SQLite for the same calls, many claimers that never take one run twice nor wait for each other, takeovers
 * by the database clock against an injected one, and the four calls that must recognise their own attempt
 * after a lost answer. The run store's contract on every backend (dead workers, operator actions, outside
 * clients' runs, paging, liveness) is test/contract/runs.test.ts. Each test has a schema of its own.
 */
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it, onTestFinished } from 'vitest';
import { ManualClock } from '../../lib/clock';
import { ConflictError, InvalidTransitionError } from '../../lib/errors';
import type { ClaimRequest, RunStore, Store } from '../../lib/store/contract';
import { openPostgresStore, type PostgresStore } from '../../lib/store/postgres';
import { openSqliteStore } from '../../lib/store/sqlite';
import { postgresAvailable, startPgProxy, type TestSchema, testSchema, testUrl } from '../support/postgres';
import { tempDir } from '../support/tmp';

const pgUp = await postgresAvailable('PostgreSQL run store tests');

async function open(
  schema: TestSchema,
  options: { url?: string; clock?: ManualClock; poolSize?: number } = {},
): Promise<PostgresStore> {
  const store = await openPostgresStore({
    url: options.url ?? testUrl(),
    schema: schema.name,
    clock: options.clock,
    poolSize: options.poolSize ?? 3,
  });
  onTestFinished(() => store.close());
  return store;
}

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

/** What a call answered, or the code of what it threw: the same calls must give the same on both backends. */
async function answer<T>(call: Promise<T>): Promise<T | { threw: string }> {
  try {
    return await call;
  } catch (error) {
    return { threw: (error as { code?: string }).code ?? String(error) };
  }
}

/** Times differ between backends (the database clock is not the ManualClock); their types must not. */
function timesAsTypes(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(timesAsTypes);
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(
    Object.entries(value).map(([k, v]) => [k, /At$|^at$/.test(k) && v !== null ? typeof v : timesAsTypes(v)]),
  );
}

/** One script of run and worker calls, every answer kept. `tick` lets time pass on the store's clock. */
async function script(store: Store & RunStore, tick: (ms: number) => Promise<void>): Promise<unknown[]> {
  const out: unknown[] = [];
  const step = async (call: Promise<unknown>) => {
    out.push(await answer(call));
    await tick(50);
  };
  await step(store.createRun(newRun('r1')));
  // r1 is the older by far more than a loaded machine's jitter: PostgreSQL stamps created_at by the database's
  // now() shifted to the ManualClock, so two creates 50 ms apart on it can land in either order under load.
  await tick(2000);
  await step(store.createRun(newRun('r2', 'wf', null)));
  await step(store.createRun(newRun('r3', 'other')));
  await step(store.createRun(newRun('r1', 'other')));
  await step(store.registerWorker({ id: 'w1', host: 'h1', pid: 101 }));
  await step(store.registerWorker({ id: 'w2', host: 'h2', pid: 202 }));
  await step(store.claimRun({ workerId: 'w1', leaseMs: 1000, workflows: ['wf'] }));
  await step(store.claimRun({ workerId: 'w2', leaseMs: 60_000, workflows: ['wf'] }));
  await step(store.claimRun({ workerId: 'w2', leaseMs: 60_000, workflows: ['wf'] }));
  await step(store.claimRun({ workerId: 'w2', leaseMs: 60_000, workflows: [] }));
  await step(store.claim(stepClaim({ idemKey: 'r1:step:0', runId: 'r1', workerId: 'w1', token: 't1' })));
  await step(store.renewRunLease('r1', 'w1', 1000));
  await tick(2000);
  await step(store.claimRun({ workerId: 'w2', leaseMs: 60_000, workflows: ['wf'] }));
  await step(store.renewRunLease('r1', 'w1', 1000));
  await step(store.actOnRun('r1', 'pause', 'ann'));
  await step(store.renewRunLease('r1', 'w2', 60_000));
  await step(store.finishRun('r1', 'w2', { status: 'completed', outputJson: '"done"' }));
  await step(store.actOnRun('r1', 'retry', 'ann'));
  await step(store.actOnRun('r2', 'cancel', 'bob'));
  await step(store.finishRun('r2', 'w2', { status: 'failed', error: 'boom' }));
  await step(store.releaseRun('r2', 'w2'));
  await step(store.actOnRun('r2', 'retry', 'bob'));
  await step(store.actOnRun('nope', 'pause', 'bob'));
  await step(store.markWorkerDead('w1', 'pid 101 is gone on h1'));
  await step(store.markWorkerDead('w1', 'pid 101 is gone on h1'));
  await step(store.heartbeatWorker('w2'));
  await step(store.stopWorker('w2'));
  // Outside clients: one with a claim in flight (written the article's way), one with progress only.
  await step(store.claim(stepClaim({ idemKey: 'ext-a:0', runId: 'ext-a', workerId: null, token: 'ta' })));
  await step(store.saveProgress({ runId: 'ext-b', step: 4, stateJson: '{}', executed: 4, skipped: 1, awaited: 0 }));
  await step(store.listWorkers());
  for (const filter of [
    {},
    { status: 'idle' as const },
    { status: 'running' as const },
    { workflow: 'external' },
    { search: 'R' },
    { search: 'ext_' },
    { search: 'EXT-' },
    { owner: 'w2' },
    { limit: 2 },
  ]) {
    await step(store.listRuns({ ...filter, claimTtlMs: 30_000 }));
  }
  const [, second] = await store.listRuns({ limit: 2, claimTtlMs: 30_000 });
  await step(store.listRuns({ limit: 2, claimTtlMs: 30_000, after: { updatedAt: second!.updatedAt, id: second!.id } }));
  for (const id of ['r1', 'r2', 'r3']) await step(store.getRun(id));
  for (const id of ['r1', 'r2']) await step(store.listEvents(id));
  return out;
}

describe.skipIf(!pgUp)('postgres run store', () => {
  it('answers a script of run and worker calls exactly as SQLite does: values, keys, number types, errors', async () => {
    const schema = await testSchema();
    const pgClock = new ManualClock();
    const pgStore = await open(schema, { clock: pgClock });
    const liteClock = new ManualClock();
    const lite = openSqliteStore({
      path: tempDir('waybill-runs-').file('w.db'),
      clock: liteClock,
      synchronous: 'normal',
    });
    onTestFinished(() => lite.close());

    const fromLite = await script(lite, async (ms) => liteClock.advance(ms));
    const fromPg = await script(pgStore, async (ms) => pgClock.advance(ms));
    expect(timesAsTypes(fromPg)).toEqual(timesAsTypes(fromLite));
    // Spot checks, so that "equal" cannot mean "equally wrong".
    expect(fromPg[3]).toEqual({ threw: 'CONFLICT' });
    expect(fromPg[12]).toMatchObject({ id: 'r1', owner: 'w2', attempts: 2 });
    expect(fromPg[13]).toEqual({ held: false, status: 'running' });
    expect(fromPg[17]).toEqual({ threw: 'INVALID_TRANSITION' });
    expect(fromPg[22]).toEqual({ threw: 'NOT_FOUND' });
    expect(fromPg[23]).toBe(1);
    const all = fromPg[30] as { id: string; workflow: string; status: string; orphanedClaims: number }[];
    expect(all.map((r) => [r.id, r.workflow, r.status])).toEqual([
      ['ext-b', 'external', 'idle'],
      ['ext-a', 'external', 'running'],
      ['r2', 'wf', 'queued'],
      ['r1', 'wf', 'completed'],
      ['r3', 'other', 'queued'],
    ]);
  });

  it('8 claimers over 20 queued runs: each run taken exactly once, none taken over', async () => {
    const schema = await testSchema();
    const stores = await Promise.all(Array.from({ length: 8 }, () => open(schema, { poolSize: 1 })));
    for (let i = 0; i < 20; i++) await stores[0]!.createRun(newRun(`r${String(i).padStart(2, '0')}`));
    const taken = await Promise.all(
      stores.map(async (store, n) => {
        const mine: string[] = [];
        for (;;) {
          const run = await store.claimRun({ workerId: `w${n}`, leaseMs: 60_000, workflows: ['wf'] });
          if (!run) return mine;
          expect(run).toMatchObject({ status: 'running', owner: `w${n}`, attempts: 1 });
          mine.push(run.id);
        }
      }),
    );
    const ids = taken.flat();
    expect(ids).toHaveLength(20);
    expect(new Set(ids).size).toBe(20);
    expect(taken.filter((mine) => mine.length > 0).length).toBeGreaterThan(1);
    const rows = await schema.admin.query<{ id: string; owner: string; attempts: number }>(
      `SELECT id, owner, attempts FROM ${schema.t('runs')} ORDER BY id`,
    );
    expect(rows.every((r) => r.attempts === 1 && taken[Number(r.owner.slice(1))]!.includes(r.id))).toBe(true);
    expect(await schema.admin.count(`SELECT count(*) FROM ${schema.t('step_events')}`)).toBe(0);
  });

  it('skips a run another claimer has locked instead of waiting for it', async () => {
    const schema = await testSchema();
    const store = await open(schema);
    await store.createRun(newRun('first'));
    await store.createRun(newRun('second'));
    const { admin, t } = schema;
    await admin.query('BEGIN');
    await admin.query(`SELECT id FROM ${t('runs')} WHERE id = 'first' FOR UPDATE`);
    const started = performance.now();
    expect(await store.claimRun({ workerId: 'w1', leaseMs: 60_000, workflows: ['wf'] })).toMatchObject({
      id: 'second',
    });
    expect(await store.claimRun({ workerId: 'w1', leaseMs: 60_000, workflows: ['wf'] })).toBeNull();
    expect(performance.now() - started).toBeLessThan(1000);
    await admin.query('ROLLBACK');
    expect(await store.claimRun({ workerId: 'w1', leaseMs: 60_000, workflows: ['wf'] })).toMatchObject({ id: 'first' });
  });

  it('takes over a run whose lease passed by the database clock, or whose owner stopped, recording `expired`', async () => {
    const schema = await testSchema();
    const plain = await open(schema);
    const clock = new ManualClock();
    const ahead = await open(schema, { clock });
    await plain.createRun(newRun('r1'));
    await plain.createRun(newRun('r2'));
    expect(await plain.claimRun({ workerId: 'w1', leaseMs: 60_000, workflows: ['wf'] })).toMatchObject({ id: 'r1' });
    expect(await plain.claimRun({ workerId: 'w1', leaseMs: 60_000, workflows: ['wf'] })).toMatchObject({ id: 'r2' });
    expect(await plain.claimRun({ workerId: 'w2', leaseMs: 60_000, workflows: ['wf'] })).toBeNull();

    // An injected clock 61 s ahead sees both leases passed; the database's own clock does not.
    clock.advance(61_000);
    expect(await ahead.claimRun({ workerId: 'w2', leaseMs: 1000, workflows: ['wf'] })).toMatchObject({
      id: 'r1',
      owner: 'w2',
      attempts: 2,
    });
    expect(await plain.renewRunLease('r1', 'w1', 60_000)).toEqual({ held: false, status: 'running' });
    expect(await plain.renewRunLease('r2', 'w1', 60_000)).toEqual({ held: true, status: 'running' });
    expect((await plain.listEvents('r1')).map((e) => [e.outcome, e.workerId, e.detail])).toEqual([
      ['expired', 'w2', 'run lease of w1 passed or its worker died; resumed by w2'],
    ]);

    // A stopped owner gives its runs up at once, lease or not.
    await plain.registerWorker({ id: 'w1', host: 'h', pid: 1 });
    await plain.stopWorker('w1');
    expect(await plain.claimRun({ workerId: 'w3', leaseMs: 60_000, workflows: ['wf'] })).toMatchObject({
      id: 'r2',
      owner: 'w3',
    });
    expect((await plain.listEvents('r2')).map((e) => e.detail)).toEqual([
      'run lease of w1 passed or its worker died; resumed by w3',
    ]);

    // And a real wait on the database clock: w2 renews r1 for 200 ms and goes silent.
    expect(await plain.renewRunLease('r1', 'w2', 200)).toEqual({ held: true, status: 'running' });
    expect(await plain.claimRun({ workerId: 'w4', leaseMs: 60_000, workflows: ['wf'] })).toBeNull();
    await sleep(400);
    expect(await plain.claimRun({ workerId: 'w4', leaseMs: 60_000, workflows: ['wf'] })).toMatchObject({
      id: 'r1',
      owner: 'w4',
      attempts: 3,
    });
    expect((await plain.listEvents('r1')).map((e) => e.detail)).toEqual([
      'run lease of w1 passed or its worker died; resumed by w2',
      'run lease of w2 passed or its worker died; resumed by w4',
    ]);
  });
});

describe.skipIf(!pgUp)('postgres run store after a lost answer', () => {
  async function lossy(schema: TestSchema) {
    const proxy = await startPgProxy(testUrl());
    onTestFinished(() => proxy.close());
    return { proxy, store: await open(schema, { url: proxy.url }) };
  }

  it('createRun: its own run is no conflict, someone else’s still is', async () => {
    const schema = await testSchema();
    const { proxy, store } = await lossy(schema);
    proxy.loseAnswerTo('waybill_run_create');
    expect(await store.createRun(newRun('r1'))).toMatchObject({ id: 'r1', status: 'queued' });
    expect(proxy.lost).toBe(1);
    await expect(store.createRun(newRun('r1'))).rejects.toBeInstanceOf(ConflictError);
    proxy.loseAnswerTo('waybill_run_create');
    await expect(store.createRun(newRun('r1', 'other'))).rejects.toBeInstanceOf(ConflictError);
    expect(proxy.lost).toBe(2);
  });

  it('claimRun: the run the lost attempt took is handed over, never one the worker already holds', async () => {
    const schema = await testSchema();
    const { proxy, store } = await lossy(schema);
    for (const id of ['r1', 'r2', 'r3']) await store.createRun(newRun(id));
    expect(await store.claimRun({ workerId: 'w1', leaseMs: 60_000, workflows: ['wf'] })).toMatchObject({ id: 'r1' });
    proxy.loseAnswerTo('waybill_run_claim');
    expect(await store.claimRun({ workerId: 'w1', leaseMs: 60_000, workflows: ['wf'] })).toMatchObject({
      id: 'r2',
      attempts: 1,
    });
    expect(proxy.lost).toBe(1);
    expect((await store.getRun('r3'))?.status).toBe('queued');
    // Nothing left for the lost attempt to take: the retry must not hand out r1 or r2 again.
    await store.actOnRun('r3', 'cancel', 'ann');
    proxy.loseAnswerTo('waybill_run_claim');
    expect(await store.claimRun({ workerId: 'w1', leaseMs: 60_000, workflows: ['wf'] })).toBeNull();
    expect(proxy.lost).toBe(2);
    // Once given back, a run of ours is no longer "held": a lost claim of it is recognised.
    await store.releaseRun('r2', 'w1');
    proxy.loseAnswerTo('waybill_run_claim');
    expect(await store.claimRun({ workerId: 'w1', leaseMs: 60_000, workflows: ['wf'] })).toMatchObject({
      id: 'r2',
      attempts: 2,
    });
  });

  it('finishRun and actOnRun: done once, and said so', async () => {
    const schema = await testSchema();
    const { proxy, store } = await lossy(schema);
    await store.createRun(newRun('r1'));
    await store.createRun(newRun('r2'));
    await store.claimRun({ workerId: 'w1', leaseMs: 60_000, workflows: ['wf'] });
    proxy.loseAnswerTo('waybill_run_finish');
    expect(await store.finishRun('r1', 'w1', { status: 'completed', outputJson: '"ok"' })).toBe(true);
    expect(await store.getRun('r1')).toMatchObject({ status: 'completed', outputJson: '"ok"', owner: null });

    proxy.loseAnswerTo('waybill_run_act');
    expect(await store.actOnRun('r2', 'pause', 'ann')).toMatchObject({ id: 'r2', status: 'paused' });
    proxy.loseAnswerTo('waybill_run_act');
    expect(await store.actOnRun('r2', 'resume', 'ann')).toMatchObject({ id: 'r2', status: 'queued' });
    expect(proxy.lost).toBe(3);
    expect((await store.listEvents('r2')).map((e) => e.detail)).toEqual([
      'pause by ann: queued → paused',
      'resume by ann: paused → queued',
    ]);
    // A refusal is still a refusal.
    proxy.loseAnswerTo('waybill_run_act');
    await expect(store.actOnRun('r2', 'retry', 'ann')).rejects.toBeInstanceOf(InvalidTransitionError);
  });
});
