/**
 * Group commit on PostgreSQL (lib/store/postgres/steps-batch.ts): commits made at the same moment go to the
 * server as one statement. What must hold, per request, exactly as when each went alone: a lost lease or a
 * key committed meanwhile fails only that request (with its one lease_lost event), a request the server
 * refuses fails only itself, a batch killed mid-flight or whose answer is lost is retried and every request
 * ends committed once, its own row recognised, never a false LeaseLostError. And the batching itself: a lone
 * run sends one request per statement (nothing waits for company), 64 runs share statements.
 *
 * The store's statements are counted at its pool: each commit or claim statement sent, and how many requests
 * it carries (one, or its jsonb array's length). A retried batch is sent, and counted, again: these are round
 * trips.
 */
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it, onTestFinished } from 'vitest';
import { runAgent } from '../../lib/checkpoint/agent';
import { Checkpoint } from '../../lib/checkpoint/checkpoint';
import { LeaseLostError } from '../../lib/errors';
import type { ClaimRequest, CommitRequest } from '../../lib/store/contract';
import { openPostgresStore, type PostgresStore, type PostgresStoreOptions } from '../../lib/store/postgres';
import { PRIOR_STATE_MAX_CHARS } from '../../lib/store/shared/columns';
import { Admin, postgresAvailable, startPgProxy, type TestSchema, testSchema, testUrl } from '../support/postgres';
import { ShiftedClock } from '../support/shifted-clock';

const pgUp = await postgresAvailable('PostgreSQL group commit tests');

type Sent = { name: 'commit' | 'claim'; requests: number };
/** The statements counted: one request each, or a batch of them as a jsonb array. */
const COUNTED: Record<string, Sent['name']> = {
  waybill_commit: 'commit',
  waybill_commit_batch: 'commit',
  waybill_claim: 'claim',
  waybill_claim_batch: 'claim',
};

/** The store, with every commit and claim statement it sends recorded in `sent`. */
async function open(
  schema: TestSchema,
  options: Partial<PostgresStoreOptions> = {},
): Promise<{ store: PostgresStore; sent: Sent[] }> {
  const store = await openPostgresStore({ url: testUrl(), schema: schema.name, ...options });
  onTestFinished(() => store.close());
  const sent: Sent[] = [];
  const query = store.pool.query.bind(store.pool) as (...args: unknown[]) => unknown;
  (store.pool as unknown as { query: (...args: unknown[]) => unknown }).query = (...args) => {
    const config = args[0] as { name?: string; values?: unknown[] } | undefined;
    const name = config?.name ? COUNTED[config.name] : undefined;
    if (name) {
      const batch = config!.name!.endsWith('_batch');
      sent.push({ name, requests: batch ? (JSON.parse(config!.values![0] as string) as unknown[]).length : 1 });
    }
    return query(...args);
  };
  return { store, sent };
}

function claimOf(idemKey: string, overrides: Partial<ClaimRequest> = {}): ClaimRequest {
  return {
    idemKey,
    runId: idemKey.split(':')[0]!,
    token: randomUUID(),
    workerId: 'w1',
    step: 0,
    attempt: 1,
    leaseMs: 30_000,
    claimTtlMs: 30_000,
    ...overrides,
  };
}

function commitOf(c: ClaimRequest, extra: Partial<CommitRequest> = {}): CommitRequest {
  return {
    idemKey: c.idemKey,
    token: c.token,
    runId: c.runId,
    resultJson: JSON.stringify({ key: c.idemKey }),
    step: c.step,
    fingerprint: null,
    workerId: c.workerId,
    durationMs: 1 + Math.random(),
    ...extra,
  };
}

/** Commits of step 0 of each run, each with its progress and the claim of step 1 taken ahead. */
function stepCommits(claims: ClaimRequest[]): { commits: CommitRequest[]; nexts: ClaimRequest[] } {
  const nexts = claims.map((c) => claimOf(`${c.runId}:1`, { step: 1 }));
  const commits = claims.map((c, i) =>
    commitOf(c, {
      progress: { runId: c.runId, step: 1, stateJson: '{"processed":1}', executed: 1, skipped: 2, awaited: 0 },
      next: nexts[i],
    }),
  );
  return { commits, nexts };
}

const count = (schema: TestSchema, sql: string, values?: unknown[]) => schema.admin.count(sql, values);

describe.skipIf(!pgUp)('postgres: group commit', () => {
  it('a batch with a lost lease and a key committed meanwhile commits the others and fails only those two', async () => {
    const schema = await testSchema('wb_gc');
    const clock = new ShiftedClock();
    const { store, sent } = await open(schema, { clock });
    const [a, lost, taken, d] = ['a:0', 'b:0', 'c:0', 'd:0'].map((key) => claimOf(key));
    for (const c of [a, lost, taken, d]) expect((await store.claim(c!)).kind).toBe('claimed');
    // b's lease passes and another worker takes it over; c is resolved by someone else while still ours.
    await clock.advance(60_000);
    const rival = claimOf('b:0', { workerId: 'w2' });
    expect(await store.claim(rival)).toMatchObject({ kind: 'claimed', tookOverFrom: { token: lost!.token } });
    await schema.admin.query(
      `INSERT INTO ${schema.t('committed')} (idem_key, run_id, result_json, committed_at, source) VALUES ('c:0', 'c', '"theirs"', 1, 'manual')`,
    );
    sent.length = 0;

    const settled = await Promise.allSettled([a, lost, taken, d].map((c) => store.commit(commitOf(c!))));

    expect(sent).toEqual([{ name: 'commit', requests: 4 }]);
    expect(settled.map((s) => s.status)).toEqual(['fulfilled', 'rejected', 'rejected', 'fulfilled']);
    const reasons = settled.flatMap((s) => (s.status === 'rejected' ? [s.reason as LeaseLostError] : []));
    expect(reasons.map((e) => [e.constructor, e.idemKey])).toEqual([
      [LeaseLostError, 'b:0'],
      [LeaseLostError, 'c:0'],
    ]);
    expect(reasons[1]!.message).toContain('committed by someone else meanwhile');
    expect(
      await schema.admin.query(`SELECT idem_key, result_json FROM ${schema.t('committed')} ORDER BY idem_key`),
    ).toEqual([
      { idem_key: 'a:0', result_json: '{"key":"a:0"}' },
      { idem_key: 'c:0', result_json: '"theirs"' },
      { idem_key: 'd:0', result_json: '{"key":"d:0"}' },
    ]);
    // The rival's claim is untouched; c's claim went with the refused commit, as on its own.
    expect(await schema.admin.query(`SELECT idem_key, token FROM ${schema.t('claims')}`)).toEqual([
      { idem_key: 'b:0', token: rival.token },
    ]);
    expect(
      // Each refused caller records its own event, after the batch: b's and c's come in either order.
      await schema.admin.query(`SELECT run_id, outcome FROM ${schema.t('step_events')} ORDER BY run_id, id`),
    ).toEqual([
      { run_id: 'b', outcome: 'expired' },
      { run_id: 'b', outcome: 'lease_lost' },
      { run_id: 'c', outcome: 'lease_lost' },
    ]);
  });

  it('a request the server refuses fails alone: the batch is rolled back and its requests sent one by one', async () => {
    const schema = await testSchema('wb_gc');
    const { store, sent } = await open(schema);
    const claims = ['a:0', 'b:0', 'c:0'].map((key) => claimOf(key));
    for (const c of claims) await store.claim(c);
    sent.length = 0;
    // A NUL in a text value is refused by PostgreSQL (it cannot store one): in the batch's jsonb it fails the
    // whole statement (22P05), alone its own, where the key is a text argument (22021).
    const refused = commitOf(claimOf('bad\u0000key:0'));

    const settled = await Promise.allSettled([
      store.commit(commitOf(claims[0]!)),
      store.commit(refused),
      store.commit(commitOf(claims[1]!)),
      store.commit(commitOf(claims[2]!)),
    ]);

    expect(settled.map((s) => s.status)).toEqual(['fulfilled', 'rejected', 'fulfilled', 'fulfilled']);
    expect((settled[1] as PromiseRejectedResult).reason).toMatchObject({ code: '22021' });
    expect(sent).toEqual([{ name: 'commit', requests: 4 }, ...Array(4).fill({ name: 'commit', requests: 1 })]);
    expect(await count(schema, `SELECT count(*) FROM ${schema.t('committed')}`)).toBe(3);
    expect(await count(schema, `SELECT count(*) FROM ${schema.t('claims')}`)).toBe(0);
    expect(await count(schema, `SELECT count(*) FROM ${schema.t('step_events')}`)).toBe(0);
  });

  it('a batch whose connection is killed mid-flight is retried whole: each step committed once, none lost', async () => {
    const schema = await testSchema('wb_gc');
    const app = `waybill_gc_${randomUUID().slice(0, 8)}`;
    const { store, sent } = await open(schema, { url: testUrl({ applicationName: app }) });
    const claims = Array.from({ length: 8 }, (_, i) => claimOf(`run${i}:0`));
    for (const c of claims) await store.claim(c);
    // Each insert into committed counts itself (a sequence, which a rollback does not undo); the third waits
    // for a lock this test holds, so the batch is killed exactly there, two rows of its own written.
    const lock = Math.floor(Math.random() * 2 ** 31);
    await schema.admin.query('SELECT pg_advisory_lock($1)', [lock]);
    await schema.admin.query(`CREATE SEQUENCE ${schema.t('commit_attempts')}`);
    await schema.admin.query(`CREATE FUNCTION ${schema.t('held_commit')}() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF nextval('${schema.name}.commit_attempts') = 3 THEN PERFORM pg_advisory_xact_lock(${lock}); END IF;
        RETURN NEW;
      END $$`);
    await schema.admin.query(`CREATE TRIGGER held_commit BEFORE INSERT ON ${schema.t('committed')}
      FOR EACH ROW EXECUTE FUNCTION ${schema.t('held_commit')}()`);
    sent.length = 0;
    const { commits, nexts } = stepCommits(claims);

    const outcomes = Promise.all(commits.map((c) => store.commit(c)));
    const waiting = `SELECT count(*) FROM pg_stat_activity
      WHERE application_name = $1 AND wait_event_type = 'Lock' AND query LIKE '%waybill_commit_batch%'`;
    while ((await count(schema, waiting, [app])) === 0) await sleep(5);
    const killed = await count(
      schema,
      `SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM pg_stat_activity
       WHERE application_name = $1 AND query LIKE '%waybill_commit_batch%'`,
      [app],
    );
    await schema.admin.query('SELECT pg_advisory_unlock($1)', [lock]);
    expect(killed).toBe(1);
    const answered = await outcomes;

    // The killed attempt and its retry, all eight in each; the first had written two rows, rolled back.
    expect(sent).toEqual([
      { name: 'commit', requests: 8 },
      { name: 'commit', requests: 8 },
    ]);
    expect(await count(schema, `SELECT last_value FROM ${schema.t('commit_attempts')}`)).toBe(3 + 8);
    // The retry wrote everything, so each next claim was made by it, and is known.
    expect(answered.map((o) => o.next?.kind)).toEqual(Array(8).fill('claimed'));
    expect(await count(schema, `SELECT count(*) FROM ${schema.t('committed')}`)).toBe(8);
    expect(await schema.admin.query(`SELECT idem_key, token FROM ${schema.t('claims')} ORDER BY idem_key`)).toEqual(
      nexts.map((n) => ({ idem_key: n.idemKey, token: n.token })),
    );
    expect(await count(schema, `SELECT sum(executed) FROM ${schema.t('progress')}`)).toBe(8);
    expect(await count(schema, `SELECT count(*) FROM ${schema.t('step_events')} WHERE outcome <> 'skipped'`)).toBe(0);
  });

  it('a batch whose answer is lost after it committed: each commit recognises its own row, written once', async () => {
    const schema = await testSchema('wb_gc');
    const proxy = await startPgProxy(testUrl());
    onTestFinished(() => proxy.close());
    const { store, sent } = await open(schema, { url: proxy.url });
    const claims = Array.from({ length: 4 }, (_, i) => claimOf(`run${i}:0`));
    for (const c of claims) await store.claim(c);
    sent.length = 0;
    const { commits, nexts } = stepCommits(claims);
    proxy.loseAnswerTo('waybill_commit_batch\0');

    const answered = await Promise.all(commits.map((c) => store.commit(c)));

    expect(proxy.lost).toBe(1);
    expect(sent).toEqual([
      { name: 'commit', requests: 4 },
      { name: 'commit', requests: 4 },
    ]);
    // Committed by the lost attempt, recognised by the retry; whether it claimed ahead is unknown to it.
    expect(answered.map((o) => o.next)).toEqual([null, null, null, null]);
    expect(await count(schema, `SELECT count(*) FROM ${schema.t('committed')}`)).toBe(4);
    // The lost attempt wrote the progress, its counters and its folded skips once; the retry nothing.
    expect(
      await schema.admin.query(
        `SELECT sum(executed)::int AS executed, sum(skipped)::int AS skipped FROM ${schema.t('progress')}`,
      ),
    ).toEqual([{ executed: 4, skipped: 8 }]);
    expect(
      await schema.admin.query(`SELECT outcome, count(*)::int AS n FROM ${schema.t('step_events')} GROUP BY outcome`),
    ).toEqual([{ outcome: 'skipped', n: 4 }]);
    // Each caller claims its next key again with the same token, and the store knows the claim as its own.
    for (const next of nexts)
      expect(await store.claim(next)).toMatchObject({ kind: 'claimed', attempt: 1, tookOverFrom: null });
    expect(await count(schema, `SELECT count(*) FROM ${schema.t('claims')}`)).toBe(4);
  });

  it('a batch answers each run its status and claims ahead only for the runs still running', async () => {
    const schema = await testSchema('wb_gc');
    const { store, sent } = await open(schema);
    const claims = ['going:0', 'paused:0', 'cancelled:0', 'outside:0'].map((key) => claimOf(key));
    for (const c of claims.slice(0, 3)) {
      await store.beginLoopRun({ runId: c.runId, workflow: 'gc', totalSteps: 2, inputJson: 'null', owner: 'w1' });
    }
    for (const c of claims) await store.claim(c);
    await schema.admin.query(`UPDATE ${schema.t('runs')} SET status = 'paused' WHERE id = 'paused'`);
    await schema.admin.query(`UPDATE ${schema.t('runs')} SET status = 'cancelled' WHERE id = 'cancelled'`);
    sent.length = 0;
    const { commits, nexts } = stepCommits(claims);

    const answered = await Promise.all(commits.map((c) => store.commit(c)));

    expect(sent).toEqual([{ name: 'commit', requests: 4 }]);
    expect(answered.map((o) => [o.runStatus, o.next?.kind ?? null])).toEqual([
      ['running', 'claimed'],
      ['paused', null],
      ['cancelled', null],
      // An outside client's run has no runs row, so nothing stops it.
      [null, 'claimed'],
    ]);
    expect(await count(schema, `SELECT count(*) FROM ${schema.t('committed')}`)).toBe(4);
    expect(await schema.admin.query(`SELECT idem_key, token FROM ${schema.t('claims')} ORDER BY idem_key`)).toEqual([
      { idem_key: nexts[0]!.idemKey, token: nexts[0]!.token },
      { idem_key: nexts[3]!.idemKey, token: nexts[3]!.token },
    ]);
  });

  it('a batch of claims whose answer is lost: each retried claim finds its own token', async () => {
    const schema = await testSchema('wb_gc');
    const proxy = await startPgProxy(testUrl());
    onTestFinished(() => proxy.close());
    const { store, sent } = await open(schema, { url: proxy.url });
    const claims = Array.from({ length: 4 }, (_, i) => claimOf(`run${i}:0`));
    proxy.loseAnswerTo('waybill_claim_batch\0');

    const answered = await Promise.all(claims.map((c) => store.claim(c)));

    expect(proxy.lost).toBe(1);
    expect(sent).toEqual([
      { name: 'claim', requests: 4 },
      { name: 'claim', requests: 4 },
    ]);
    // The lost attempt made the four claims; the retry finds each held by its own token, not by a rival.
    expect(answered).toEqual(
      claims.map(() => expect.objectContaining({ kind: 'claimed', attempt: 1, tookOverFrom: null })),
    );
    expect(await schema.admin.query(`SELECT idem_key, token FROM ${schema.t('claims')} ORDER BY idem_key`)).toEqual(
      claims.map((c) => ({ idem_key: c.idemKey, token: c.token })),
    );
    expect(await count(schema, `SELECT count(*) FROM ${schema.t('step_events')}`)).toBe(0);
  });

  it('a batch one of whose rows is locked elsewhere commits the others at once; the locked one waits alone, then commits once', async () => {
    const schema = await testSchema('wb_gc');
    const { store, sent } = await open(schema);
    const claims = ['a:0', 'b:0', 'c:0', 'd:0'].map((key) => claimOf(key));
    for (const c of claims) expect((await store.claim(c)).kind).toBe('claimed');
    // Another transaction (an operator's psql, say) holds b's claim row and does not end.
    const locker = await Admin.connect();
    onTestFinished(() => locker.end());
    await locker.query('BEGIN');
    await locker.query(`SELECT 1 FROM ${schema.t('claims')} WHERE idem_key = 'b:0' FOR UPDATE`);
    sent.length = 0;

    const commits = claims.map((c) => store.commit(commitOf(c)));
    let bSettled = false;
    void commits[1]!.finally(() => {
      bSettled = true;
    });
    // a, c and d are answered while b's row is still locked: the batch gave up on the lock and split.
    await Promise.all([commits[0], commits[2], commits[3]]);
    expect(bSettled).toBe(false);
    expect(await count(schema, `SELECT count(*) FROM ${schema.t('committed')}`)).toBe(3);
    await locker.query('ROLLBACK');
    expect((await commits[1])!.runStatus).toBeNull();

    // The batch once, rolled back whole; then each request alone.
    expect(sent).toEqual([{ name: 'commit', requests: 4 }, ...claims.map(() => ({ name: 'commit', requests: 1 }))]);
    expect(
      await schema.admin.query(`SELECT idem_key, result_json FROM ${schema.t('committed')} ORDER BY idem_key`),
    ).toEqual(claims.map((c) => ({ idem_key: c.idemKey, result_json: JSON.stringify({ key: c.idemKey }) })));
    expect(await count(schema, `SELECT count(*) FROM ${schema.t('claims')}`)).toBe(0);
    expect(await count(schema, `SELECT count(*) FROM ${schema.t('step_events')}`)).toBe(0);
  });

  it('a lone run sends each commit alone: nothing waits for company', async () => {
    const schema = await testSchema('wb_gc');
    const { store, sent } = await open(schema);
    const STEPS = 40;
    const report = await runAgent(
      Array.from({ length: STEPS }, (_, i) => i),
      new Checkpoint(store, 'lone'),
      (item) => item,
    );
    expect(report).toEqual({ processed: STEPS, executed: STEPS, skipped: 0, awaited: 0 });
    // One claim for the first step; every later one is claimed ahead by the commit before it.
    expect(sent).toEqual([{ name: 'claim', requests: 1 }, ...Array(STEPS).fill({ name: 'commit', requests: 1 })]);
  });

  it('groupCommit: false sends every commit alone, however many are ready at once', async () => {
    const schema = await testSchema('wb_gc');
    const { store, sent } = await open(schema, { groupCommit: false });
    const claims = Array.from({ length: 8 }, (_, i) => claimOf(`run${i}:0`));
    await Promise.all(claims.map((c) => store.claim(c)));
    await Promise.all(claims.map((c) => store.commit(commitOf(c))));
    expect(sent).toEqual([
      ...Array(8).fill({ name: 'claim', requests: 1 }),
      ...Array(8).fill({ name: 'commit', requests: 1 }),
    ]);
    expect(await count(schema, `SELECT count(*) FROM ${schema.t('committed')}`)).toBe(8);
  });

  it('64 concurrent runs in one process: every step executed and committed once, in far fewer statements', async () => {
    const schema = await testSchema('wb_gc');
    const { store, sent } = await open(schema);
    const RUNS = 64;
    const STEPS = 50;
    const executions = new Map<string, number>();
    const reports = await Promise.all(
      Array.from({ length: RUNS }, (_, r) =>
        runAgent(
          Array.from({ length: STEPS }, (_, i) => i),
          new Checkpoint(store, `run-${r}`),
          (item, ctx) => {
            executions.set(ctx.idempotencyKey, (executions.get(ctx.idempotencyKey) ?? 0) + 1);
            return item;
          },
        ),
      ),
    );

    expect(reports).toEqual(Array(RUNS).fill({ processed: STEPS, executed: STEPS, skipped: 0, awaited: 0 }));
    expect(executions.size).toBe(RUNS * STEPS);
    expect([...executions.values()].filter((n) => n !== 1)).toEqual([]);
    expect(await count(schema, `SELECT count(*) FROM ${schema.t('committed')}`)).toBe(RUNS * STEPS);
    expect(await count(schema, `SELECT count(*) FROM ${schema.t('claims')}`)).toBe(0);
    expect(await count(schema, `SELECT count(*) FROM ${schema.t('progress')} WHERE executed = ${STEPS}`)).toBe(RUNS);
    expect(await count(schema, `SELECT count(*) FROM ${schema.t('step_events')}`)).toBe(0);
    // Each request sent once (nothing was retried): one claim per run, one commit per step.
    const commits = sent.filter((s) => s.name === 'commit');
    const claims = sent.filter((s) => s.name === 'claim');
    expect(commits.reduce((n, s) => n + s.requests, 0)).toBe(RUNS * STEPS);
    expect(claims.reduce((n, s) => n + s.requests, 0)).toBe(RUNS);
    // At most 8 batches are in flight (a pool of 10, less 2) while 64 runs wait on their commits, so a
    // statement carries 8 commits on average once the runs are going; 4 leaves room for the start and end.
    console.log(`64 runs: ${RUNS * STEPS} commits in ${commits.length} statements, ${RUNS} claims in ${claims.length}`);
    expect(commits.length).toBeLessThanOrEqual((RUNS * STEPS) / 4);
  });

  it('every field of a request reaches the store through the batch function, as through the lone one', async () => {
    // The batch functions read each request's fields from jsonb by name: a name out of step with the TypeScript
    // that writes them would arrive as null (a next claim silently dropped, a retry's landed check switched off).
    const schema = await testSchema('wb_gc');
    for (const [label, runs] of [
      ['lone', ['solo']],
      ['batch', ['x', 'y']],
    ] as const) {
      const { store, sent } = await open(schema);
      const claims = runs.map((run) => claimOf(`${run}:0`, { workerId: `w-${run}` }));
      for (const c of claims) expect((await store.claim(c)).kind).toBe('claimed');
      sent.length = 0;
      const nexts = claims.map((c) =>
        claimOf(`${c.runId}:1`, { step: 1, attempt: 3, leaseMs: 45_000, workerId: `n-${c.runId}` }),
      );
      const outcomes = await Promise.all(
        claims.map((c, i) =>
          store.commit(
            commitOf(c, {
              fingerprint: `fp-${c.runId}`,
              inputJson: `{"in":"${c.runId}"}`,
              durationMs: 12.5,
              progress: {
                runId: c.runId,
                step: 1,
                stateJson: `{"s":"${c.runId}"}`,
                executed: 1,
                skipped: 2,
                awaited: 3,
                saveMs: 0.25,
              },
              next: nexts[i],
            }),
          ),
        ),
      );
      expect(sent, label).toEqual([{ name: 'commit', requests: runs.length }]);
      for (const [i, c] of claims.entries()) {
        expect(outcomes[i]!.next, label).toMatchObject({ kind: 'claimed', attempt: 3 });
        const [row] = await schema.admin.query(
          `SELECT run_id, step, fingerprint, worker_id, duration_ms, input_json, result_json FROM ${schema.t('committed')} WHERE idem_key = '${c.idemKey}'`,
        );
        expect(row, label).toEqual({
          run_id: c.runId,
          step: 0,
          fingerprint: `fp-${c.runId}`,
          worker_id: `w-${c.runId}`,
          duration_ms: 12.5,
          input_json: `{"in":"${c.runId}"}`,
          result_json: JSON.stringify({ key: c.idemKey }),
        });
        const [progress] = await schema.admin.query(
          `SELECT step, state_json, executed, skipped, awaited, save_ms FROM ${schema.t('progress')} WHERE run_id = '${c.runId}'`,
        );
        expect(progress, label).toEqual({
          step: 1,
          state_json: `{"s":"${c.runId}"}`,
          executed: 1,
          skipped: 2,
          awaited: 3,
          save_ms: 0.25,
        });
        const [next] = await schema.admin.query(
          `SELECT run_id, token, worker_id, step, attempt, round((lease_expires_at - claimed_at)::numeric) AS lease FROM ${schema.t('claims')} WHERE idem_key = '${c.runId}:1'`,
        );
        expect(next, label).toEqual({
          run_id: c.runId,
          token: nexts[i]!.token,
          worker_id: `n-${c.runId}`,
          step: 1,
          attempt: 3,
          lease: '45',
        });
      }
      await store.close();
    }
  });

  it('the commit function copies the prior state up to the bound the SQLite side uses, and no further', async () => {
    // The bound is written in the function's SQL (drizzle/pg/0017_group_commit.sql): this is what keeps the two equal.
    const schema = await testSchema('wb_gc');
    const { store } = await open(schema);
    for (const [chars, copied] of [
      [PRIOR_STATE_MAX_CHARS, true],
      [PRIOR_STATE_MAX_CHARS + 1, false],
    ] as const) {
      const run = `prior-${chars}`;
      // A state of exactly `chars` characters: {"p":"xxx…"} is 8 characters around the padding.
      await store.saveProgress({
        runId: run,
        step: 0,
        stateJson: JSON.stringify({ p: 'x'.repeat(chars - 8) }),
        executed: 0,
        skipped: 0,
        awaited: 0,
      });
      const claim = claimOf(`${run}:step:0`, { runId: run });
      await store.claim(claim);
      await store.commit(commitOf(claim));
      const row = await store.getCommitted(claim.idemKey);
      expect(row?.priorStateJson?.length ?? null).toBe(copied ? chars : null);
    }
  });
});
