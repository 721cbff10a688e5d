/**
 * waybill_commit_batch writes a batch set-wise (lib/store/postgres/functions/commit-batch.ts): each step of the
 * commit once for every request. What must hold: every request answered, and every table left, exactly as if each
 * request had been sent alone; a batch whose requests are not independent goes request by request; and its
 * statements read the tables by their keys whatever size the tables had when the session kept its plans.
 *
 * One statement wrote a batch when its committed rows share one committed_at: a request sent alone reads the
 * clock for itself.
 */
import { describe, expect, it, onTestFinished } from 'vitest';
import type { ClaimRequest, CommitRequest } from '../../lib/store/contract';
import { openPostgresStore, type PostgresStore } from '../../lib/store/postgres';
import { postgresAvailable, type TestSchema, testSchema, testUrl } from '../support/postgres';

const pgUp = await postgresAvailable('PostgreSQL set-wise batch tests');

async function open(schema: TestSchema, groupCommit: boolean): Promise<PostgresStore> {
  const store = await openPostgresStore({ url: testUrl(), schema: schema.name, groupCommit });
  onTestFinished(() => store.close());
  return store;
}

/** A claim with a token derived from its key, so that two stores given the same scenario hold the same rows. */
const claimOf = (idemKey: string, overrides: Partial<ClaimRequest> = {}): ClaimRequest => ({
  idemKey,
  runId: idemKey.split(':')[0]!,
  token: `t-${idemKey}-${overrides.workerId ?? 'w1'}`,
  workerId: 'w1',
  step: Number(idemKey.split(':')[1]),
  attempt: 1,
  leaseMs: 30_000,
  claimTtlMs: 30_000,
  ...overrides,
});

const commitOf = (c: ClaimRequest, extra: Partial<CommitRequest> = {}): CommitRequest => ({
  idemKey: c.idemKey,
  token: c.token,
  runId: c.runId,
  resultJson: JSON.stringify({ key: c.idemKey }),
  step: c.step,
  fingerprint: `fp-${c.runId}`,
  workerId: c.workerId,
  durationMs: 2.5,
  attempt: 1,
  ...extra,
});

const progressOf = (run: string, step: number, skipped = 0, awaited = 0) => ({
  runId: run,
  step,
  stateJson: JSON.stringify({ run, step }),
  executed: 1,
  skipped,
  awaited,
});

/** The runs of the scenario that have a runs row, executed by w1 on its first take (attempts 1). */
const OWNED = ['fenced', 'refenced', 'held', 'done', 'lost', 'bare', 'skips', 'paused', 'twice'];

/**
 * Each run's step 0 claimed by w1, then the world changed under some of them, and the commits of all, each with
 * the claim of its step 1 taken ahead (fenced for runs with a runs row), in one call each.
 */
async function scenario(store: PostgresStore, schema: TestSchema, runs: string[]): Promise<CommitRequest[]> {
  for (const run of OWNED) {
    await store.createRun({ id: run, workflow: 'batch', inputJson: '{}', totalSteps: 3 });
  }
  await schema.admin.query(
    `UPDATE ${schema.t('runs')} SET status = 'running', owner = 'w1', attempts = 1 WHERE id = ANY($1)`,
    [OWNED],
  );
  const steps = runs.map((run) => claimOf(`${run}:0`, OWNED.includes(run) ? { fence: 1 } : {}));
  for (const c of steps) expect((await store.claim(c)).kind).toBe('claimed');
  // refenced: taken over since (its attempts raised); held: its next key is another worker's; done: its next
  // key was resolved by hand; lost: its claim was resolved to another token; paused: paused by an operator.
  await schema.admin.query(`UPDATE ${schema.t('runs')} SET attempts = 2 WHERE id = 'refenced'`);
  if (runs.includes('held')) expect((await store.claim(claimOf('held:1', { workerId: 'w2' }))).kind).toBe('claimed');
  await schema.admin.query(
    `INSERT INTO ${schema.t('committed')} (idem_key, run_id, result_json, committed_at, step, source)
      VALUES ('done:1', 'done', '"by hand"', 1, 1, 'manual')`,
  );
  await schema.admin.query(`UPDATE ${schema.t('claims')} SET token = 'another' WHERE idem_key = 'lost:0'`);
  await schema.admin.query(`UPDATE ${schema.t('runs')} SET status = 'paused' WHERE id = 'paused'`);
  return steps.map((c) => {
    const next = claimOf(`${c.runId}:1`, c.fence ? { fence: 1 } : {});
    if (c.runId === 'bare') return commitOf(c, { next });
    const skipped = c.runId === 'skips' ? 2 : 0;
    return commitOf(c, { progress: progressOf(c.runId, 1, skipped, skipped ? 1 : 0), next });
  });
}

/** Each commit's answer, and the four tables a commit writes, without times and ids. */
/**
 * The commits sent `together` (in one event-loop turn: the group-committing store makes them one batch) or one by
 * one, each after the last has answered: the order a batch must keep. Sent at once without group commit they went
 * on several connections, and two steps of one run could land in either order.
 */
async function outcome(store: PostgresStore, schema: TestSchema, commits: CommitRequest[], together: boolean) {
  const settled: PromiseSettledResult<Awaited<ReturnType<PostgresStore['commit']>>>[] = [];
  if (together) settled.push(...(await Promise.allSettled(commits.map((c) => store.commit(c)))));
  else for (const c of commits) settled.push(...(await Promise.allSettled([store.commit(c)])));
  const answers = settled.map((s) =>
    s.status === 'rejected'
      ? (s.reason as Error).message
      : { next: s.value.next?.kind ?? null, runStatus: s.value.runStatus },
  );
  const rows = (table: string, columns: string, order: string) =>
    schema.admin.query(`SELECT ${columns} FROM ${schema.t(table)} ORDER BY ${order}`);
  return {
    answers,
    committed: await rows(
      'committed',
      'idem_key, run_id, result_json, step, fingerprint, worker_id, duration_ms, source, prior_step, prior_state_json',
      'idem_key',
    ),
    claims: await rows(
      'claims',
      'idem_key, run_id, token, worker_id, step, attempt, lease_expires_at - claimed_at AS lease',
      'idem_key',
    ),
    progress: await rows('progress', 'run_id, step, state_json, executed, skipped, awaited, committed_count', 'run_id'),
    events: await rows('step_events', 'run_id, idem_key, step, outcome, count, worker_id, detail', 'run_id, outcome'),
  };
}

/** How many distinct committed_at the rows of these runs' step 0 have: 1 when one statement wrote them all. */
const instants = async (schema: TestSchema, runs: string[]) =>
  schema.admin.count(
    `SELECT count(DISTINCT committed_at) FROM ${schema.t('committed')} WHERE run_id = ANY($1) AND source = 'executed'`,
    [runs],
  );

describe.skipIf(!pgUp)('postgres: a batch written set-wise', () => {
  it('answers each request and leaves each table as the requests sent one by one would', async () => {
    const runs = ['outside', ...OWNED.filter((run) => run !== 'twice')];
    const [batched, alone] = [await testSchema('wb_cb'), await testSchema('wb_cb')];
    const [a, b] = [await open(batched, true), await open(alone, false)];

    const together = await outcome(a, batched, await scenario(a, batched, runs), true);
    const oneByOne = await outcome(b, alone, await scenario(b, alone, runs), false);

    expect(together).toEqual(oneByOne);
    expect(await instants(batched, runs)).toBe(1);
    expect(await instants(alone, runs)).toBe(runs.length - 1);
    // What the scenario is, so that the comparison compares something.
    expect(together.answers).toEqual([
      { next: 'claimed', runStatus: null },
      { next: 'claimed', runStatus: 'running' },
      { next: null, runStatus: 'running' },
      { next: 'held', runStatus: 'running' },
      { next: 'committed', runStatus: 'running' },
      'lease lost on lost:0: the claim is no longer held by this token; nothing was committed',
      { next: 'claimed', runStatus: 'running' },
      { next: 'claimed', runStatus: 'running' },
      { next: null, runStatus: 'paused' },
    ]);
    expect(together.progress.map((p) => [p.run_id, p.committed_count])).toEqual([
      ['done', 2],
      ['fenced', 1],
      ['held', 1],
      ['outside', 1],
      ['paused', 1],
      ['refenced', 1],
      ['skips', 1],
    ]);
    expect(together.events.map((e) => [e.run_id, e.outcome, e.count])).toEqual([
      ['lost', 'lease_lost', 1],
      ['skips', 'awaited', 1],
      ['skips', 'skipped', 2],
    ]);
  });

  it('sends a batch with two steps of one run request by request, each as alone', async () => {
    const [batched, alone] = [await testSchema('wb_cb'), await testSchema('wb_cb')];
    const [a, b] = [await open(batched, true), await open(alone, false)];
    const commits = async (store: PostgresStore) => {
      const steps = ['twice:0', 'twice:5', 'fenced:0'].map((key) => claimOf(key));
      for (const c of steps) expect((await store.claim(c)).kind).toBe('claimed');
      return steps.map((c) => commitOf(c, { progress: progressOf(c.runId, c.step! + 1) }));
    };

    const together = await outcome(a, batched, await commits(a), true);
    const oneByOne = await outcome(b, alone, await commits(b), false);

    expect(together).toEqual(oneByOne);
    expect(await instants(batched, ['twice', 'fenced'])).toBe(3);
    expect(together.progress.map((p) => [p.run_id, p.step, p.executed, p.committed_count])).toEqual([
      ['fenced', 1, 1, 1],
      ['twice', 6, 2, 2],
    ]);
  });

  it("sends a batch request by request when one's next key is another's key, in both of the lease's states", async () => {
    // In order, a's claim of b:0 meets b's claim, still held (or taken over once its lease passed, which then
    // fails b's commit); set-wise every claim would be gone first.
    for (const expired of [false, true]) {
      const [batched, alone] = [await testSchema('wb_cb'), await testSchema('wb_cb')];
      const [a, b] = [await open(batched, true), await open(alone, false)];
      const commits = async (store: PostgresStore, schema: TestSchema) => {
        const steps = ['a:0', 'b:0'].map((key) => claimOf(key));
        for (const c of steps) expect((await store.claim(c)).kind).toBe('claimed');
        if (expired) {
          await schema.admin.query(`UPDATE ${schema.t('claims')} SET lease_expires_at = 0 WHERE idem_key = 'b:0'`);
        }
        return [
          commitOf(steps[0]!, { progress: progressOf('a', 1), next: claimOf('b:0', { token: 'a-takes-b', step: 0 }) }),
          commitOf(steps[1]!, { progress: progressOf('b', 1), next: claimOf('b:1') }),
        ];
      };

      const together = await outcome(a, batched, await commits(a, batched), true);
      const oneByOne = await outcome(b, alone, await commits(b, alone), false);

      expect(together).toEqual(oneByOne);
      expect(await instants(batched, ['a', 'b'])).toBe(expired ? 1 : 2);
      expect(together.answers[0]).toEqual({ next: expired ? 'claimed' : 'held', runStatus: null });
    }
  });

  it('reads every table by its key, however small the tables were when the session kept its plans', async () => {
    // A plan kept while `committed` held a page reads it whole once it holds a million rows; the function's
    // planner settings keep every statement on the tables' keys. Counted in one transaction of one session.
    const schema = await testSchema('wb_cb');
    await (await open(schema, true)).close();
    const admin = schema.admin;
    await admin.query(`SET search_path = "${schema.name}"`);
    await admin.query('BEGIN');
    try {
      for (let step = 0; step < 8; step++) {
        const requests = ['p', 'q', 'r'].map((run) => {
          const c = claimOf(`${run}:${step}`);
          return {
            key: c.idemKey,
            token: c.token,
            run,
            result: '1',
            step,
            fingerprint: null,
            worker: 'w1',
            duration: 1,
            input: null,
            mayHaveLanded: false,
            progress: { run, step: step + 1, state: '{}', executed: 1, skipped: 0, awaited: 0, saveMs: null },
            next: {
              key: `${run}:${step + 1}`,
              run,
              token: `t-${run}:${step + 1}-w1`,
              worker: 'w1',
              step: step + 1,
              attempt: 1,
              lease: 30,
              ttl: 30,
              fence: null,
            },
          };
        });
        if (step === 0) {
          for (const r of requests) {
            await admin.query(
              `INSERT INTO claims (idem_key, run_id, claimed_at, token, worker_id, lease_expires_at, heartbeat_at, step, attempt)
                VALUES ($1, $2, 0, $3, 'w1', 1e12, 0, 0, 1)`,
              [r.key, r.run, r.token],
            );
          }
        }
        const answers = await admin.query<{ inserted: number; next: { kind: string } }>(
          'SELECT * FROM waybill_commit_batch($1::jsonb, 0)',
          [JSON.stringify(requests)],
        );
        expect(answers.map((r) => [r.inserted, r.next.kind])).toEqual(requests.map(() => [1, 'fresh']));
      }
      const scans = await admin.query<{ relname: string; seq_scan: string; idx_scan: string }>(
        `SELECT relname, seq_scan, idx_scan FROM pg_stat_xact_user_tables
          WHERE schemaname = $1 AND relname IN ('committed', 'claims', 'progress', 'runs') ORDER BY relname`,
        [schema.name],
      );
      expect(scans.map((s) => [s.relname, Number(s.seq_scan)])).toEqual([
        ['claims', 0],
        ['committed', 0],
        ['progress', 0],
        ['runs', 0],
      ]);
      expect(scans.every((s) => Number(s.idx_scan) > 0)).toBe(true);
    } finally {
      await admin.query('ROLLBACK');
    }
  });
});
