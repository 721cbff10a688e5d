/**
 * The commit and the claim on PostgreSQL as batch writers: the requests given go to the server as one
 * statement, waybill_commit_batch or waybill_claim_batch (drizzle/pg/0011_group_commit.sql), which is one
 * round trip, one transaction and one WAL flush, and answers one row per request. A request on its own is a
 * batch of one, so there is one commit and one claim, whether group commit (lib/store/group-commit.ts) sits in
 * front of them or not; what each request decides is written once, in SQL.
 *
 * Failures, as a commit on its own had them:
 * - A transient one (a lost connection, a deadlock, a cancel) is of the whole batch, which is retried whole
 *   (retry.ts). A batch whose outcome is unknown (mayHaveRun) marks each of its commits as one that may have
 *   landed, and each commit's retry then recognises its own committed row. A claim's retry recognises its
 *   own token by itself.
 * - A refusal (the server rejects a value, a bug) rolls the batch back whole, having written nothing; each
 *   request is then sent alone, so the refusal fails only its own caller.
 * - Out of retries (StoreUnavailableError), every request of the batch fails, as each would have alone.
 */
import { sql } from 'drizzle-orm';
import { StoreUnavailableError } from '../../errors';
import { groupCommit, type Settled } from '../group-commit';
import type { ClaimRequest, ClaimRow, CommitRequest, CommittedRow, RunStatus } from '../types';
import { prepare, type PgConnection } from './connection';
import { mayHaveRun, withRetry } from './retry';

type Stored<T> = Omit<T, 'orphaned'>;

/** What waybill_claim decides for one claim. */
export type ClaimResult = {
  kind: 'committed' | 'taken' | 'mine' | 'fresh' | 'held' | 'retry';
  done: CommittedRow | null;
  holder: Stored<ClaimRow> | null;
  old: Stored<ClaimRow> | null;
  attempt: number | null;
  leaseExpiresAt: number | null;
  msUntilExpiry: number | null;
};

/** What waybill_commit_batch decides for one commit (the SQL says what each column means). */
export type CommitResult = {
  deleted: number;
  inserted: number;
  heldByUs: boolean;
  landed: boolean;
  next: ClaimResult | null;
  runStatus: RunStatus | null;
};

type Values = { requests: string; skew: number };
const P = (name: keyof Values) => sql.placeholder(name);

// Named as the one-request statements they replace were: node-postgres prepares each once per connection,
// and an operator (or a test's proxy) finds them by these names.
const COMMIT = prepare<Values>(
  'waybill_commit',
  sql`SELECT * FROM waybill_commit_batch(${P('requests')}::jsonb, ${P('skew')}::float8)`,
);
const CLAIM = prepare<Values>(
  'waybill_claim',
  sql`SELECT * FROM waybill_claim_batch(${P('requests')}::jsonb, ${P('skew')}::float8)`,
);

/** A commit in the batch, and whether an attempt of it may have landed without an answer. */
type PendingCommit = { request: CommitRequest; unknown: boolean };

/** One commit as waybill_commit_batch reads it. Plain literal, every field by name: this is the hot path. */
function commitEntry({ request: r, unknown }: PendingCommit) {
  const p = r.progress;
  const n = r.next;
  return {
    key: r.idemKey,
    token: r.token,
    run: r.runId,
    result: r.resultJson,
    step: r.step,
    fingerprint: r.fingerprint,
    worker: r.workerId,
    duration: r.durationMs,
    input: r.inputJson ?? null,
    mayHaveLanded: unknown,
    pRun: p ? p.runId : null,
    pStep: p ? p.step : null,
    pState: p ? p.stateJson : null,
    pExecuted: p ? p.executed : null,
    pSkipped: p ? p.skipped : null,
    pAwaited: p ? p.awaited : null,
    pSaveMs: p?.saveMs ?? null,
    nKey: n ? n.idemKey : null,
    nRun: n ? n.runId : null,
    nToken: n ? n.token : null,
    nWorker: n ? n.workerId : null,
    nStep: n ? n.step : null,
    nAttempt: n ? n.attempt : null,
    nLease: n ? n.leaseMs / 1000 : null,
    nTtl: n ? n.claimTtlMs / 1000 : null,
  };
}

function claimEntry(r: ClaimRequest) {
  return {
    key: r.idemKey,
    run: r.runId,
    token: r.token,
    worker: r.workerId,
    step: r.step,
    attempt: r.attempt,
    lease: r.leaseMs / 1000,
    ttl: r.claimTtlMs / 1000,
  };
}

/** Writes commits as one statement, each answered on its own (see the file's comment for failures). */
export function commitBatch(c: PgConnection): (requests: CommitRequest[]) => Promise<Settled<CommitResult>[]> {
  const write = (batch: PendingCommit[]) =>
    withRetry(
      'commit',
      async () => {
        const values = { requests: JSON.stringify(batch.map(commitEntry)), skew: c.skew() };
        return answers<CommitResult>(batch.length, (await c.exec<CommitResult, Values>(COMMIT, values)).rows);
      },
      {
        onTransient: (error) => {
          if (mayHaveRun(error)) for (const pending of batch) pending.unknown = true;
        },
      },
    );
  return (requests) =>
    settleEach(
      requests.map((request) => ({ request, unknown: request.mayHaveLanded ?? false })),
      write,
    );
}

/** Makes claims in one statement, each answered on its own (see the file's comment for failures). */
export function claimBatch(c: PgConnection): (requests: ClaimRequest[]) => Promise<Settled<ClaimResult>[]> {
  const write = (batch: ClaimRequest[]) =>
    withRetry('claim', async () => {
      const values = { requests: JSON.stringify(batch.map(claimEntry)), skew: c.skew() };
      return answers<ClaimResult>(batch.length, (await c.exec<ClaimResult, Values>(CLAIM, values)).rows);
    });
  return (requests) => settleEach(requests, write);
}

function answers<R>(expected: number, rows: R[]): R[] {
  if (rows.length !== expected) throw new Error(`PostgreSQL answered ${rows.length} rows for ${expected} requests`);
  return rows;
}

/**
 * The batch written whole; if the server refused it, each request alone, so that only the one it refuses
 * fails. Out of retries, the batch fails whole: the database is away for all of them alike, and sending each
 * alone would only multiply the load on a server that is struggling.
 */
async function settleEach<Req, Res>(batch: Req[], write: (batch: Req[]) => Promise<Res[]>): Promise<Settled<Res>[]> {
  try {
    return (await write(batch)).map((value) => ({ ok: true, value }));
  } catch (error) {
    if (batch.length === 1 || error instanceof StoreUnavailableError) return batch.map(() => ({ ok: false, error }));
  }
  return Promise.all(
    batch.map(async (one): Promise<Settled<Res>> => {
      try {
        return { ok: true, value: (await write([one]))[0]! };
      } catch (error) {
        return { ok: false, error };
      }
    }),
  );
}

export interface BatchOptions {
  /** Requests ready at the same moment share one statement (group-commit.ts); off, each is a batch of one. */
  groupCommit: boolean;
  /** Batches written at once, each on a pooled connection of its own. */
  maxInFlight: number;
}

/** The per-call function over a batch writer. */
export function perCall<Req, Res>(
  write: (requests: Req[]) => Promise<Settled<Res>[]>,
  options: BatchOptions,
): (request: Req) => Promise<Res> {
  if (options.groupCommit) return groupCommit(write, { maxInFlight: options.maxInFlight });
  return async (request) => {
    const [answer] = await write([request]);
    if (answer!.ok) return answer!.value;
    throw answer!.error;
  };
}
