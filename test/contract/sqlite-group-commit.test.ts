/**
 * Group commit on SQLite (lib/store/sqlite/steps-batch.ts), on real files: what one batch does when some of
 * its requests are refused, fail or take the whole transaction down, and what 64 loops in one process cost in
 * transactions. Requests are put in one batch by making them in the same turn of the event loop; that they
 * were is asserted from the store's own counts, never assumed.
 */
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Checkpoint, runAgent, stepKey } from '../../lib/checkpoint';
import { ManualClock } from '../../lib/clock';
import { parseConfig, storeOptions } from '../../lib/config';
import { LeaseLostError, StoreUnavailableError } from '../../lib/errors';
import type { ClaimRequest, CommitRequest } from '../../lib/store/contract';
import { openBackend } from '../../lib/store/index';
import { openSqliteStore, type SqliteStore } from '../../lib/store/sqlite';
import { makeTempDir, type TempDir } from '../support/tmp';

let dir: TempDir;
const opened: { close(): unknown }[] = [];

beforeEach(() => {
  dir = makeTempDir('waybill-gc-');
});

afterEach(async () => {
  for (const handle of opened.splice(0)) await handle.close();
  dir.remove();
});

function open(options: { busyTimeoutMs?: number } = {}): SqliteStore {
  const store = openSqliteStore({
    path: dir.file('store.db'),
    clock: new ManualClock(),
    synchronous: 'full',
    ...options,
  });
  opened.push(store);
  return store;
}

/** Another connection on the same file: what it sees was committed, not merely written. */
function reader(): Database.Database {
  const db = new Database(dir.file('store.db'), { readonly: true });
  opened.push(db);
  return db;
}

const claimOf = (idemKey: string, runId: string, token: string): ClaimRequest => ({
  idemKey,
  runId,
  token,
  workerId: 'w1',
  step: 0,
  attempt: 1,
  leaseMs: 30_000,
  claimTtlMs: 30_000,
});

const commitOf = (idemKey: string, runId: string, token: string): CommitRequest => ({
  idemKey,
  token,
  runId,
  resultJson: JSON.stringify({ from: token }),
  step: 0,
  fingerprint: null,
  workerId: 'w1',
  durationMs: 1,
  progress: { runId, step: 1, stateJson: '{"processed":1}', executed: 1, skipped: 0, awaited: 0 },
  next: claimOf(`${runId}:next`, runId, `${token}-next`),
});

/** Four runs r0..r3, each with its step claimed under token t0..t3, claimed one by one. */
async function fourClaims(store: SqliteStore): Promise<void> {
  for (let i = 0; i < 4; i++) {
    const outcome = await store.claim(claimOf(`r${i}:step:0`, `r${i}`, `t${i}`));
    expect(outcome.kind).toBe('claimed');
  }
}

/** Commits r0..r3 in one turn: one batch. Returns what each caller got and what the batch cost. */
async function commitFourAtOnce(store: SqliteStore) {
  const before = store.writeCounts();
  const answers = await Promise.allSettled(
    [0, 1, 2, 3].map((i) => store.commit(commitOf(`r${i}:step:0`, `r${i}`, `t${i}`))),
  );
  const after = store.writeCounts();
  return {
    answers,
    batches: after.batches - before.batches,
    transactions: after.transactions - before.transactions,
    requests: after.batchedRequests - before.batchedRequests,
  };
}

async function leaseLostEvents(store: SqliteStore, runId: string) {
  return (await store.listEvents(runId)).filter((e) => e.outcome === 'lease_lost');
}

describe('SQLite group commit', () => {
  it('a batch in which one claim was taken over commits the other three and fails only that one, recording its lease_lost once', async () => {
    const store = open();
    await fourClaims(store);
    // r1's lease ends now and a rival takes the claim over under its own token, before the batch.
    expect(await store.renewClaim('r1:step:0', 't1', 0)).toBe(true);
    const rival = await store.claim(claimOf('r1:step:0', 'r1', 'rival'));
    expect(rival).toMatchObject({ kind: 'claimed', attempt: 2 });

    const { answers, batches, transactions, requests } = await commitFourAtOnce(store);
    expect({ batches, transactions, requests }).toEqual({ batches: 1, transactions: 1, requests: 4 });
    expect(answers.map((a) => a.status)).toEqual(['fulfilled', 'rejected', 'fulfilled', 'fulfilled']);
    const refusal = (answers[1] as PromiseRejectedResult).reason;
    expect(refusal).toBeInstanceOf(LeaseLostError);
    for (const i of [0, 2, 3]) {
      const outcome = (answers[i] as PromiseFulfilledResult<Awaited<ReturnType<SqliteStore['commit']>>>).value;
      // The next key's claim was made in the same transaction, as a lone commit makes it.
      expect(outcome).toMatchObject({ runStatus: null, next: { kind: 'claimed', attempt: 1 } });
    }

    const db = reader();
    const committed = db
      .prepare('SELECT idem_key AS key, result_json AS result FROM committed ORDER BY idem_key')
      .all();
    expect(committed).toEqual([
      { key: 'r0:step:0', result: '{"from":"t0"}' },
      { key: 'r2:step:0', result: '{"from":"t2"}' },
      { key: 'r3:step:0', result: '{"from":"t3"}' },
    ]);
    const claims = db.prepare('SELECT idem_key AS key, token FROM claims ORDER BY idem_key').all();
    expect(claims).toEqual([
      { key: 'r0:next', token: 't0-next' },
      { key: 'r1:step:0', token: 'rival' },
      { key: 'r2:next', token: 't2-next' },
      { key: 'r3:next', token: 't3-next' },
    ]);
    expect((await store.loadProgress('r0'))?.step).toBe(1);
    expect(await store.loadProgress('r1')).toBeNull();
    expect(await leaseLostEvents(store, 'r1')).toMatchObject([{ idemKey: 'r1:step:0', workerId: 'w1' }]);
    for (const runId of ['r0', 'r2', 'r3']) expect(await leaseLostEvents(store, runId)).toEqual([]);
  });

  it('a batch in which one key was committed by someone else meanwhile rolls back only that commit: its claim deletion is undone', async () => {
    const store = open();
    await fourClaims(store);
    // Another client (the article's own, an operator's psql) commits r2's key while t2 still holds the claim.
    store.db
      .prepare(
        `INSERT INTO committed (idem_key, run_id, result_json, committed_at) VALUES ('r2:step:0', 'r2', '"theirs"', 1)`,
      )
      .run();

    const { answers, batches, transactions } = await commitFourAtOnce(store);
    expect({ batches, transactions }).toEqual({ batches: 1, transactions: 1 });
    expect(answers.map((a) => a.status)).toEqual(['fulfilled', 'fulfilled', 'rejected', 'fulfilled']);
    const refusal = (answers[2] as PromiseRejectedResult).reason;
    expect(refusal).toBeInstanceOf(LeaseLostError);
    expect((refusal as Error).message).toContain('committed by someone else meanwhile');

    const db = reader();
    // The refused commit had deleted its claim before its insert was refused: its savepoint put the claim back,
    // and wrote neither its progress nor its next claim; the neighbours' writes all stand.
    expect(db.prepare(`SELECT token FROM claims WHERE idem_key = 'r2:step:0'`).get()).toEqual({ token: 't2' });
    expect(db.prepare(`SELECT 1 FROM claims WHERE idem_key = 'r2:next'`).get()).toBeUndefined();
    expect(await store.loadProgress('r2')).toBeNull();
    expect((await store.getCommitted('r2:step:0'))?.resultJson).toBe('"theirs"');
    for (const i of [0, 1, 3]) {
      expect((await store.getCommitted(`r${i}:step:0`))?.resultJson).toBe(`{"from":"t${i}"}`);
      expect((await store.loadProgress(`r${i}`))?.step).toBe(1);
    }
    expect(await leaseLostEvents(store, 'r2')).toMatchObject([
      { idemKey: 'r2:step:0', detail: expect.stringContaining('committed by someone else') },
    ]);
    for (const runId of ['r0', 'r1', 'r3']) expect(await leaseLostEvents(store, runId)).toEqual([]);
  });

  it('a refusal sends the batch round again: what its neighbours wrote in the first pass is written once, events included', async () => {
    const store = open();
    await fourClaims(store);
    // r0's claim is orphaned: a claim in the batch takes it over, which writes an `expired` event. r1's claim
    // is taken by a rival, so r1's commit in the same batch is refused and the batch goes round again.
    expect(await store.renewClaim('r0:step:0', 't0', 0)).toBe(true);
    expect(await store.renewClaim('r1:step:0', 't1', 0)).toBe(true);
    expect(await store.claim(claimOf('r1:step:0', 'r1', 'rival'))).toMatchObject({ kind: 'claimed' });
    const before = store.writeCounts();
    const [takeover, refused, committed] = await Promise.allSettled([
      store.claim(claimOf('r0:step:0', 'r0', 'new-holder')),
      store.commit(commitOf('r1:step:0', 'r1', 't1')),
      store.commit(commitOf('r2:step:0', 'r2', 't2')),
    ]);
    const after = store.writeCounts();
    expect({ batches: after.batches - before.batches, transactions: after.transactions - before.transactions }).toEqual(
      {
        batches: 1,
        transactions: 1,
      },
    );
    expect(takeover).toMatchObject({ status: 'fulfilled', value: { kind: 'claimed', attempt: 2 } });
    expect(refused.status).toBe('rejected');
    expect(committed.status).toBe('fulfilled');
    const outcomes = async (runId: string) => (await store.listEvents(runId)).map((e) => e.outcome);
    expect(await outcomes('r0')).toEqual(['expired']);
    // r1: the rival's takeover before the batch, then the refused commit's lease_lost, once.
    expect(await outcomes('r1')).toEqual(['expired', 'lease_lost']);
    expect(await outcomes('r2')).toEqual([]);
    const db = reader();
    expect(db.prepare(`SELECT token FROM claims WHERE idem_key = 'r0:step:0'`).get()).toEqual({ token: 'new-holder' });
    expect(db.prepare('SELECT count(*) AS n FROM committed').get()).toEqual({ n: 1 });
    expect((await store.loadProgress('r2'))?.executed).toBe(1);
  });

  it('a request that fails on a constraint fails alone; the claims beside it in the batch are made', async () => {
    const store = open();
    const before = store.writeCounts();
    const requests = [
      claimOf('a:step:0', 'a', 'ta'),
      claimOf('b:step:0', null as never, 'tb'),
      claimOf('c:step:0', 'c', 'tc'),
    ];
    const answers = await Promise.allSettled(requests.map((r) => store.claim(r)));
    expect(store.writeCounts().batches - before.batches).toBe(1);
    expect(answers.map((a) => a.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect(String((answers[1] as PromiseRejectedResult).reason)).toContain('NOT NULL');
    const keys = reader().prepare('SELECT idem_key AS key FROM claims ORDER BY idem_key').all();
    expect(keys).toEqual([{ key: 'a:step:0' }, { key: 'c:step:0' }]);
  });

  it('an error that rolls the whole transaction back fails every caller in the batch, and nothing of it is written', async () => {
    const store = open();
    await fourClaims(store);
    // RAISE(ROLLBACK) ends the transaction itself, as SQLite does on a full disk: no savepoint survives it.
    store.db.exec(`CREATE TRIGGER doom BEFORE INSERT ON committed WHEN NEW.idem_key = 'r3:step:0'
      BEGIN SELECT RAISE(ROLLBACK, 'doomed'); END`);
    const { answers, batches } = await commitFourAtOnce(store);
    expect(batches).toBe(0);
    for (const answer of answers) {
      expect(answer.status).toBe('rejected');
      expect(String((answer as PromiseRejectedResult).reason)).toContain('doomed');
    }
    const db = reader();
    expect(db.prepare('SELECT count(*) AS n FROM committed').get()).toEqual({ n: 0 });
    expect(db.prepare('SELECT idem_key AS key, token FROM claims ORDER BY idem_key').all()).toEqual(
      [0, 1, 2, 3].map((i) => ({ key: `r${i}:step:0`, token: `t${i}` })),
    );
    // The store is usable at once: the same commits, trigger gone, land in one batch.
    store.db.exec('DROP TRIGGER doom');
    const again = await commitFourAtOnce(store);
    expect(again.answers.map((a) => a.status)).toEqual(['fulfilled', 'fulfilled', 'fulfilled', 'fulfilled']);
    expect(again.batches).toBe(1);
  });

  it('SQLITE_BUSY for the whole batch rejects every caller with StoreUnavailableError, as each would be alone', async () => {
    const store = open({ busyTimeoutMs: 20 });
    await fourClaims(store);
    const other = new Database(dir.file('store.db'));
    opened.push(other);
    other.exec('BEGIN IMMEDIATE');
    const { answers, batches } = await commitFourAtOnce(store);
    other.exec('ROLLBACK');
    expect(batches).toBe(0);
    for (const answer of answers) {
      expect(answer.status).toBe('rejected');
      expect((answer as PromiseRejectedResult).reason).toBeInstanceOf(StoreUnavailableError);
    }
    expect(reader().prepare('SELECT count(*) AS n FROM committed').get()).toEqual({ n: 0 });
    const again = await commitFourAtOnce(store);
    expect(again.answers.every((a) => a.status === 'fulfilled')).toBe(true);
  });

  it('64 concurrent runAgent loops: every step runs and commits once, each after its claim is durable, in far fewer transactions than steps', async () => {
    // The system clock: leases, renewals and timers as in production.
    const store = openSqliteStore({ path: dir.file('store.db'), synchronous: 'full' });
    opened.push(store);
    const db = reader();
    const claimed = db.prepare<[string], { token: string }>('SELECT token FROM claims WHERE idem_key = ?');
    const committed = db.prepare<[string], { n: number }>('SELECT 1 AS n FROM committed WHERE idem_key = ?');
    const RUNS = 64;
    const STEPS = 25;
    const executions = new Map<string, number>();
    const unseen: string[] = [];
    const before = store.writeCounts();
    const reports = await Promise.all(
      Array.from({ length: RUNS }, (_, r) =>
        runAgent(
          Array.from({ length: STEPS }, (_, i) => i),
          new Checkpoint(store, `loop-${r}`, { workerId: 'w1' }),
          (item, ctx) => {
            executions.set(ctx.idempotencyKey, (executions.get(ctx.idempotencyKey) ?? 0) + 1);
            // Another connection sees this step's claim (committed before the side effect started) and the
            // previous step's result (committed, not merely written, before runOnce returned).
            if (!claimed.get(ctx.idempotencyKey)) unseen.push(`claim of ${ctx.idempotencyKey}`);
            if (item > 0 && !committed.get(stepKey(`loop-${r}`, item - 1)))
              unseen.push(`result before ${ctx.idempotencyKey}`);
            return item * 2;
          },
          { workflow: 'gc-loops' },
        ),
      ),
    );
    const counts = store.writeCounts();
    const steps = RUNS * STEPS;
    expect(unseen).toEqual([]);
    expect(reports.every((report) => report.executed === STEPS && report.skipped === 0)).toBe(true);
    expect(executions.size).toBe(steps);
    expect([...executions.values()].every((n) => n === 1)).toBe(true);
    expect(db.prepare('SELECT count(*) AS n FROM committed').get()).toEqual({ n: steps });
    expect(db.prepare('SELECT count(*) AS n FROM claims').get()).toEqual({ n: 0 });
    expect(db.prepare(`SELECT count(*) AS n FROM runs WHERE status = 'completed'`).get()).toEqual({ n: RUNS });
    for (let r = 0; r < RUNS; r++) expect(committed.get(stepKey(`loop-${r}`, STEPS - 1))).toBeDefined();
    // Exactly what went through the queue: each loop's first claim, then one commit per step (the next claim
    // rides in it). The loops' start and end rows (2 per run) are transactions of their own.
    expect(counts.batchedRequests - before.batchedRequests).toBe(RUNS + steps);
    const transactions = counts.transactions - before.transactions;
    expect(transactions).toBe(counts.batches - before.batches + 2 * RUNS);
    expect(transactions).toBeLessThan(steps / 4);
  });

  it('run lease renewals ride the step batch of their turn: four renewals and four commits are one transaction, each renewal answered as alone', async () => {
    const store = open();
    for (let i = 0; i < 4; i++) {
      await store.createRun({ id: `r${i}`, workflow: 'wf', inputJson: '{}', totalSteps: 1 });
      expect(await store.claimRun({ workerId: 'w1', leaseMs: 1000, workflows: ['wf'], runId: `r${i}` })).toMatchObject({
        attempts: 1,
      });
    }
    await fourClaims(store);
    (store.clock as ManualClock).advance(500);
    const before = store.writeCounts();
    const [renewals, commits] = await Promise.all([
      Promise.all([
        store.renewRunLease('r0', 'w1', 60_000, 1),
        // An older execution's fence and another worker's id are refused inside the batch as they are alone.
        store.renewRunLease('r1', 'w1', 60_000, 0),
        store.renewRunLease('r2', 'w2', 60_000, 1),
        store.renewRunLease('r3', 'w1', 60_000),
      ]),
      Promise.all([0, 1, 2, 3].map((i) => store.commit(commitOf(`r${i}:step:0`, `r${i}`, `t${i}`)))),
    ]);
    const after = store.writeCounts();
    expect({
      batches: after.batches - before.batches,
      transactions: after.transactions - before.transactions,
      requests: after.batchedRequests - before.batchedRequests,
    }).toEqual({ batches: 1, transactions: 1, requests: 8 });
    expect(renewals).toEqual([
      { held: true, status: 'running' },
      { held: false, status: 'running' },
      { held: false, status: 'running' },
      { held: true, status: 'running' },
    ]);
    expect(commits.every((outcome) => outcome.next?.kind === 'claimed')).toBe(true);
    // The renewed leases run from the batch's clock; the refused ones keep the lease claimRun gave them.
    const leases = reader().prepare('SELECT id, lease_expires_at AS leaseExpiresAt FROM runs ORDER BY id').all() as {
      id: string;
      leaseExpiresAt: number;
    }[];
    const now = store.clock.now() / 1000;
    expect(leases.map((l) => Math.round((l.leaseExpiresAt - now) * 1000))).toEqual([60_000, 500, 500, 60_000]);
  });

  it('a lone loop waits for no company: each of its claims and commits is a batch of one', async () => {
    const store = open();
    const before = store.writeCounts();
    const report = await runAgent([1, 2, 3, 4, 5, 6, 7, 8, 9, 10], new Checkpoint(store, 'alone'), (n) => n);
    expect(report.executed).toBe(10);
    const counts = store.writeCounts();
    expect(counts.batches - before.batches).toBe(11);
    expect(counts.batchedRequests - before.batchedRequests).toBe(11);
  });

  it('with group commit off every claim and commit is a transaction of its own, and nothing is batched', async () => {
    const store = openSqliteStore({ path: dir.file('solo.db'), synchronous: 'normal', groupCommit: false });
    opened.push(store);
    await Promise.all([0, 1, 2, 3].map((r) => runAgent([1, 2, 3], new Checkpoint(store, `solo-${r}`), (n) => n)));
    expect(store.writeCounts()).toEqual({ transactions: 4 * 4, batches: 0, batchedRequests: 0 });
  });

  it('WAYBILL_GROUP_COMMIT turns it on (the default) or off, and refuses anything else naming the variable', async () => {
    expect(storeOptions(parseConfig({})).groupCommit).toBe(true);
    expect(storeOptions(parseConfig({ WAYBILL_GROUP_COMMIT: 'on' })).groupCommit).toBe(true);
    expect(storeOptions(parseConfig({ WAYBILL_GROUP_COMMIT: 'off' })).groupCommit).toBe(false);
    for (const bad of ['yes', 'OFF', '0', ''])
      expect(() => parseConfig({ WAYBILL_GROUP_COMMIT: bad })).toThrow(
        'invalid environment: WAYBILL_GROUP_COMMIT: must be on or off',
      );
    // The setting reaches the store as the processes open it (storeOptions into openStore).
    for (const setting of ['on', 'off']) {
      const backend = await openBackend(
        `file:${dir.file(`${setting}.db`)}`,
        storeOptions(parseConfig({ WAYBILL_GROUP_COMMIT: setting })),
      );
      opened.push(backend);
      await runAgent([1, 2], new Checkpoint(backend, `run-${setting}`), (n) => n);
      if (backend.dialect !== 'sqlite') throw new Error('expected SQLite');
      expect(backend.writeCounts().batches).toBe(setting === 'on' ? 3 : 0);
    }
  });
});
