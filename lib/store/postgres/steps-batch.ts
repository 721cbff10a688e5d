/**
 * The commit and the claim on PostgreSQL as batch writers. What one request does is one PL/pgSQL function,
 * waybill_commit or waybill_claim (drizzle/pg/0019_run_fence.sql, as 0017 and 0015 left them): a request on
 * its own calls it directly; several are one statement, waybill_commit_batch or waybill_claim_batch, that calls
 * it for each in turn — one round trip, one transaction, one WAL flush, one answer row per request. Group
 * commit (lib/store/shared/group-commit.ts) decides what goes together; without it every batch is a request alone.
 *
 * Failures, as a commit on its own had them:
 * - A transient one (a lost connection, a deadlock, a cancel) is of the whole batch, which is retried whole
 *   (retry.ts). A batch whose outcome is unknown (mayHaveRun) marks each of its commits as one that may have
 *   landed, and each commit's retry then recognises its own committed row. A claim's retry recognises its
 *   own token by itself.
 * - A refusal (the server rejects a value, a bug) rolls the batch back whole, having written nothing; each
 *   request is then sent alone, so the refusal fails only its own caller.
 * - A batch that waited too long for a row lock (its function's lock_timeout, drizzle/pg/0018) or deadlocked
 *   is rolled back whole, and each request is sent alone: a row locked elsewhere holds up its own request
 *   only, never its neighbours, and a request alone waits for the lock as it always did.
 * - Out of retries (StoreUnavailableError), every request of the batch fails, as each would have alone.
 */
import { sql } from 'drizzle-orm';
import { StoreUnavailableError } from '../../errors';
import { groupCommit, type Answer, type Settled } from '../shared/group-commit';
import type { ClaimRequest, ClaimRow, CommitRequest, CommittedRow, RunStatus } from '../contract';
import { prepare, type PgConnection } from './connection';
import { mayHaveRun, withRetry } from './retry';

type Stored<T> = Omit<T, 'orphaned'>;

/** What waybill_claim decides for one claim. */
export type ClaimResult = {
  kind: 'committed' | 'taken' | 'mine' | 'fresh' | 'held' | 'retry' | 'fenced';
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

type Batch = { requests: string; skew: number };
const P = (name: string) => sql.placeholder(name);

// Named, so node-postgres prepares each once per connection; an operator (or a test's proxy) finds them by
// these names, and the one-request ones keep the names the statements they replaced had.
const COMMIT = prepare<CommitValues>(
  'waybill_commit',
  sql`SELECT * FROM waybill_commit(${P('key')}::text, ${P('token')}::text, ${P('run')}::text, ${P('result')}::text,
    ${P('step')}::int, ${P('fingerprint')}::text, ${P('worker')}::text, ${P('duration')}::float8, ${P('input')}::text,
    ${P('mayHaveLanded')}::boolean, ${P('pRun')}::text, ${P('pStep')}::int, ${P('pState')}::text,
    ${P('pExecuted')}::int, ${P('pSkipped')}::int, ${P('pAwaited')}::int, ${P('pSaveMs')}::float8,
    ${P('nKey')}::text, ${P('nRun')}::text, ${P('nToken')}::text, ${P('nWorker')}::text, ${P('nStep')}::int,
    ${P('nAttempt')}::int, ${P('nLease')}::float8, ${P('nTtl')}::float8, ${P('skew')}::float8, ${P('nFence')}::int)`,
);
const COMMIT_BATCH = prepare<Batch>(
  'waybill_commit_batch',
  sql`SELECT * FROM waybill_commit_batch(${P('requests')}::jsonb, ${P('skew')}::float8)`,
);
const CLAIM = prepare<ClaimValues>(
  'waybill_claim',
  sql`SELECT * FROM waybill_claim(${P('key')}::text, ${P('run')}::text, ${P('token')}::text, ${P('worker')}::text,
    ${P('step')}::int, ${P('attempt')}::int, ${P('lease')}::float8, ${P('ttl')}::float8, ${P('skew')}::float8,
    ${P('fence')}::int)`,
);
const CLAIM_BATCH = prepare<Batch>(
  'waybill_claim_batch',
  sql`SELECT * FROM waybill_claim_batch(${P('requests')}::jsonb, ${P('skew')}::float8)`,
);

/** A commit in the batch, and whether an attempt of it may have landed without an answer. */
type PendingCommit = { request: CommitRequest; unknown: boolean };

/** One commit's fields, by the names waybill_commit_batch reads and COMMIT's placeholders have. */
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
    nFence: n?.fence ?? null,
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
    fence: r.fence ?? null,
  };
}

type CommitValues = ReturnType<typeof commitEntry> & { skew: number };
type ClaimValues = ReturnType<typeof claimEntry> & { skew: number };

/** Writes commits as one statement, each answered on its own (see the file's comment for failures). */
export function commitBatch(c: PgConnection): (requests: CommitRequest[]) => Promise<Answer<CommitResult>[]> {
  const send = async (batch: PendingCommit[]) => {
    const skew = c.skew();
    const { rows } =
      batch.length === 1
        ? await c.exec<CommitResult, CommitValues>(COMMIT, { ...commitEntry(batch[0]!), skew })
        : await c.exec<CommitResult, Batch>(COMMIT_BATCH, { requests: JSON.stringify(batch.map(commitEntry)), skew });
    return answers(batch.length, rows);
  };
  const write = (batch: PendingCommit[]) =>
    withRetry('commit', () => splittable(batch.length, () => send(batch)), {
      onTransient: (error) => {
        if (mayHaveRun(error)) for (const pending of batch) pending.unknown = true;
      },
    });
  return (requests) =>
    settleEach(
      requests.map((request) => ({ request, unknown: request.mayHaveLanded ?? false })),
      write,
    );
}

/** Makes claims in one statement, each answered on its own (see the file's comment for failures). */
export function claimBatch(c: PgConnection): (requests: ClaimRequest[]) => Promise<Answer<ClaimResult>[]> {
  const send = async (batch: ClaimRequest[]) => {
    const skew = c.skew();
    const { rows } =
      batch.length === 1
        ? await c.exec<ClaimResult, ClaimValues>(CLAIM, { ...claimEntry(batch[0]!), skew })
        : await c.exec<ClaimResult, Batch>(CLAIM_BATCH, { requests: JSON.stringify(batch.map(claimEntry)), skew });
    return answers(batch.length, rows);
  };
  return (requests) =>
    settleEach(requests, (batch) => withRetry('claim', () => splittable(batch.length, () => send(batch))));
}

/** lock_not_available (the batch function's lock_timeout) and deadlock_detected: both rolled the batch back. */
const SPLIT_SQLSTATES = new Set(['55P03', '40P01']);

/**
 * What a batch answers when it is to be sent again request by request, not retried whole: a retry would wait
 * for the same lock, and a deadlock between two batches could recur. A value, not an error, so withRetry
 * hands it straight back to settleEach.
 */
const SPLIT = Symbol('send each request alone');

/** Sends a batch; a lock timeout or deadlock of a batch of several answers SPLIT. */
async function splittable<T>(size: number, send: () => Promise<T>): Promise<T | typeof SPLIT> {
  try {
    return await send();
  } catch (error) {
    const code = (error as { code?: unknown } | null)?.code;
    if (size > 1 && typeof code === 'string' && SPLIT_SQLSTATES.has(code)) return SPLIT;
    throw error;
  }
}

/** A pg DatabaseError: the server answered with an SQLSTATE, so the statement did not commit. */
const refusedByServer = (error: unknown): boolean =>
  typeof (error as { code?: unknown } | null)?.code === 'string' &&
  /^[0-9A-Z]{5}$/.test((error as { code: string }).code);

function answers<R>(expected: number, rows: R[]): R[] {
  if (rows.length !== expected) throw new Error(`PostgreSQL answered ${rows.length} rows for ${expected} requests`);
  return rows;
}

/**
 * The batch written whole; if the server refused it, each request alone, so that only the one it refuses
 * fails. Out of retries, the batch fails whole: the database is away for all of them alike, and sending each
 * alone would only multiply the load on a server that is struggling.
 */
async function settleEach<Req, Res>(
  batch: Req[],
  write: (batch: Req[]) => Promise<Res[] | typeof SPLIT>,
): Promise<Answer<Res>[]> {
  try {
    const answered = await write(batch);
    if (answered !== SPLIT) return answered.map((value) => ({ ok: true, value }));
  } catch (error) {
    // Only the server's refusal (an SQLSTATE) proves the batch rolled back. Any other error (an answer of the
    // wrong shape) may come after it committed: sent again alone, a commit would find its claim gone and be
    // told its lease was lost. Each caller gets the error instead, and a step's retry finds its result.
    if (batch.length === 1 || error instanceof StoreUnavailableError || !refusedByServer(error))
      return batch.map(() => ({ ok: false, error }));
  }
  // Not awaited together: each caller is answered when its own request is (shared/group-commit.ts, Answer).
  return batch.map(async (one): Promise<Settled<Res>> => {
    try {
      // A batch of one is never SPLIT (splittable).
      return { ok: true, value: ((await write([one])) as Res[])[0]! };
    } catch (error) {
      return { ok: false, error };
    }
  });
}

export interface BatchOptions {
  /** Requests ready at the same moment share one statement (shared/group-commit.ts); off, each is a batch of one. */
  groupCommit: boolean;
  /** Batches written at once, each on a pooled connection of its own. */
  maxInFlight: number;
}

/** The per-call function over a batch writer. */
export function perCall<Req, Res>(
  write: (requests: Req[]) => Promise<Answer<Res>[]>,
  options: BatchOptions,
): (request: Req) => Promise<Res> {
  if (options.groupCommit) return groupCommit(write, { maxInFlight: options.maxInFlight });
  return async (request) => {
    const [answer] = await Promise.all(await write([request]));
    if (answer!.ok) return answer!.value;
    throw answer!.error;
  };
}
