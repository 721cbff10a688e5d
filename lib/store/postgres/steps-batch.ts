/**
 * The commit and the claim on PostgreSQL as batch writers. What one request does is one PL/pgSQL function,
 * waybill_commit or waybill_claim (functions/commit.ts, claim.ts), which takes the request as one jsonb object
 * (commitFields, claimFields): a request on its own calls it directly (a commit its form with the object's fields
 * as arguments, waybill_commit_fields); several are one statement,
 * waybill_commit_batch (functions/commit-batch.ts: the batch written set-wise, each step once for all of it) or
 * waybill_claim_batch (functions/batch.ts: each object of its array handed to waybill_claim in turn) — one round
 * trip, one transaction, one WAL flush, one answer row per request. Group commit
 * (lib/store/shared/group-commit.ts) decides what goes together; without it every batch is a request alone.
 *
 * Failures, as a commit on its own had them:
 * - A transient one (a lost connection, a deadlock, a cancel) is of the whole batch, which is retried whole
 *   (retry.ts). A batch whose outcome is unknown (mayHaveRun) marks each of its commits as one that may have
 *   landed, and each commit's retry then recognises its own committed row. A claim's retry recognises its
 *   own token by itself.
 * - A refusal (the server rejects a value, a bug) rolls the batch back whole, having written nothing; each
 *   request is then sent alone, so the refusal fails only its own caller.
 * - A batch that waited too long for a row lock (its function's lock_timeout, functions/batch.ts) or deadlocked
 *   is rolled back whole, and each request is sent alone: a row locked elsewhere holds up its own request
 *   only, never its neighbours, and a request alone waits for the lock as it always did.
 * - Out of retries (StoreUnavailableError), every request of the batch fails, as each would have alone.
 */
import { sql } from 'drizzle-orm';
import { StoreUnavailableError } from '../../errors';
import type { ClaimRequest, ClaimRow, CommitRequest, CommittedRow, ProgressWrite, RunStatus } from '../contract';
import { type Answer, groupCommit, type Settled } from '../shared/group-commit';
import { type PgConnection, type Prepared, prepare } from './connection';
import { COMMIT_ARGUMENTS } from './functions/commit';
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

/** What waybill_commit decides for one commit (functions/commit.ts says what each column means). */
export type CommitResult = {
  deleted: number;
  inserted: number;
  heldByUs: boolean;
  landed: boolean;
  next: ClaimResult | null;
  runStatus: RunStatus | null;
};

/** One request object (or, to a batch function, an array of them) as JSON text, and the clock's skew. */
type Call = { request: string; skew: number };
const P = (name: string) => sql.placeholder(name);

// Named, so node-postgres prepares each once per connection; an operator (or a test's proxy) finds them by
// these names, and the one-request ones keep the names the statements they replaced had.
const callOf = (fn: string) =>
  prepare<Call>(fn, sql`SELECT * FROM ${sql.raw(fn)}(${P('request')}::jsonb, ${P('skew')}::float8)`);
const COMMIT_BATCH = callOf('waybill_commit_batch');
const CLAIM = callOf('waybill_claim');
const CLAIM_BATCH = callOf('waybill_claim_batch');

/**
 * A commit alone: its fields as waybill_commit_fields' arguments (functions/commit.ts), under its old name, and its
 * answer one JSON text, a CommitResult: a row of six columns cost both ends more than the text and its parse.
 */
type CommitArguments = Record<string, unknown>;
const COMMIT: Prepared<CommitArguments> = {
  name: 'waybill_commit',
  text: `SELECT waybill_commit_fields(${COMMIT_ARGUMENTS.map((a, i) => `$${i + 1}::${a.type}`).join(', ')},
    $${COMMIT_ARGUMENTS.length + 1}::float8) AS answer`,
  slots: [...COMMIT_ARGUMENTS.map((_, i) => String(i)), 'skew'],
};

/** A commit request's fields in waybill_commit_fields' order, then the clock's skew, under COMMIT's slots. */
function commitArguments(fields: ReturnType<typeof commitFields>, skew: number): CommitArguments {
  const values: CommitArguments = { skew };
  COMMIT_ARGUMENTS.forEach(({ within, field }, i) => {
    const from: Record<string, unknown> | null = within ? fields[within] : fields;
    values[i] = from ? (from[field] ?? null) : null;
  });
  return values;
}

/** A commit in the batch, and whether an attempt of it may have landed without an answer. */
type PendingCommit = { request: CommitRequest; unknown: boolean };

/** A progress write as waybill_save_progress reads it (functions/progress.ts): on its own, or a commit's. */
export function progressFields(p: ProgressWrite) {
  return {
    run: p.runId,
    step: p.step,
    state: p.stateJson,
    executed: p.executed,
    skipped: p.skipped,
    awaited: p.awaited,
    saveMs: p.saveMs ?? null,
  };
}

/** A claim as waybill_claim reads it (functions/claim.ts): alone, in a batch, or as a commit's next. */
function claimFields(r: ClaimRequest) {
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

/** A commit as waybill_commit reads it (functions/commit.ts): alone or in a batch. */
function commitFields({ request: r, unknown }: PendingCommit) {
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
    progress: r.progress ? progressFields(r.progress) : null,
    next: r.next ? claimFields(r.next) : null,
  };
}

/** Writes commits as one statement, each answered on its own (see the file's comment for failures). */
export function commitBatch(c: PgConnection): (requests: CommitRequest[]) => Promise<Answer<CommitResult>[]> {
  const send = async (batch: PendingCommit[]) => {
    if (batch.length === 1) {
      const { rows } = await c.exec<{ answer: string }, CommitArguments>(
        COMMIT,
        commitArguments(commitFields(batch[0]!), c.skew()),
      );
      return answers(1, rows).map((row) => JSON.parse(row.answer) as CommitResult);
    }
    const { rows } = await c.exec<CommitResult, Call>(COMMIT_BATCH, {
      request: JSON.stringify(batch.map(commitFields)),
      skew: c.skew(),
    });
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
    const request = JSON.stringify(batch.length === 1 ? claimFields(batch[0]!) : batch.map(claimFields));
    const { rows } = await c.exec<ClaimResult, Call>(batch.length === 1 ? CLAIM : CLAIM_BATCH, {
      request,
      skew: c.skew(),
    });
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
