/**
 * The rows the store hands out. Each is exactly its table's row as the Drizzle schemas infer it
 * (`$inferSelect` of schema/sqlite.ts and of schema/pg.ts): test/contract/schema-types.test.ts fails the
 * typecheck the moment a column is added, dropped or retyped in either schema without its row here.
 *
 * They are written out rather than derived here because these types are the package's public surface
 * (dist/index.d.ts): a derived type would make every TypeScript consumer type-check drizzle-orm's own
 * declarations, which do not compile with skipLibCheck off (test/package/install.test.ts). Times are epoch
 * seconds, durations ms, JSON crosses as text.
 */

export type Dialect = 'sqlite' | 'postgres';

export type Outcome =
  | 'executed'
  | 'skipped'
  | 'awaited'
  | 'failed'
  | 'expired'
  | 'resolved'
  | 'lease_lost'
  | 'operator'
  | 'key_reuse';

export interface ProgressRow {
  runId: string;
  step: number;
  stateJson: string;
  updatedAt: number;
  executed: number;
  skipped: number;
  awaited: number;
  /** How long the last progress write took, measured by its writer (ms). */
  saveMs: number | null;
  /** The run's committed rows, kept by the store in the writes that add or remove them; null where unknown. */
  committedCount: number | null;
}

export interface CommittedRow {
  idemKey: string;
  runId: string;
  resultJson: string;
  committedAt: number;
  step: number | null;
  fingerprint: string | null;
  workerId: string | null;
  durationMs: number | null;
  /** `forked`: copied from another run by a fork, from the row keyed forkedFrom. */
  source: 'executed' | 'manual' | 'forked';
  forkedFrom: string | null;
  /** What the step was given, when its caller recorded it (bounded: see lib/checkpoint/step-input.ts). */
  inputJson: string | null;
  /**
   * The run's progress as it stood when this step committed (before the commit's own progress write): the map
   * as it was when the step was reached, which a rerun or fork from this step puts back. Null: not recorded.
   */
  priorStep: number | null;
  priorStateJson: string | null;
}

export interface ClaimRow {
  idemKey: string;
  runId: string;
  claimedAt: number;
  token: string | null;
  workerId: string | null;
  leaseExpiresAt: number | null;
  heartbeatAt: number | null;
  step: number | null;
  attempt: number;
  /** The lease has passed by the store's clock: whether the side effect happened is unknown. */
  orphaned: boolean;
}

export interface StepEvent {
  id: number;
  runId: string;
  idemKey: string | null;
  step: number | null;
  outcome: Outcome;
  count: number;
  durationMs: number | null;
  workerId: string | null;
  detail: string | null;
  at: number;
  /**
   * The attempt the event is about, as data: the failed or refused one; for a takeover the taker's (workerId);
   * for an expiry the released claim's. Null where it was not known (older rows, outside clients).
   */
  attempt: number | null;
  /** A failed attempt: how many attempts its policy allows, and when the next is due (epoch s; null: no retry). */
  maxAttempts: number | null;
  retryAt: number | null;
  /** A takeover: the holder whose lease passed, and its attempt. */
  previousWorkerId: string | null;
  previousAttempt: number | null;
}

/** `waiting`: parked at a durable wait (lib/engine/waits.ts), holding no worker. `rejected`: ended by a rejected approval. */
export type RunStatus = 'queued' | 'running' | 'paused' | 'waiting' | 'completed' | 'failed' | 'cancelled' | 'rejected';
export type RunAction = 'pause' | 'resume' | 'cancel' | 'retry';

export interface RunRow {
  id: string;
  workflow: string;
  inputJson: string;
  status: RunStatus;
  totalSteps: number | null;
  owner: string | null;
  leaseExpiresAt: number | null;
  attempts: number;
  error: string | null;
  outputJson: string | null;
  createdAt: number;
  updatedAt: number;
  startedAt: number | null;
  finishedAt: number | null;
  /** A fork's original run, and the step it was forked from (steps before it were copied). */
  forkedFromRun: string | null;
  forkedAtStep: number | null;
  /** USD its model calls may spend through the gateway before the next is refused; null: no limit. */
  budgetUsd: number | null;
  /** A child run's parent (ctx.startChild); detached children outlive the parent's cancel. */
  parentRunId: string | null;
  detached: boolean;
  /** Higher is picked first (lib/domain/run-limits.ts). */
  priority: number;
  /** The W3C traceparent its spans continue (lib/tracing.ts); null: none yet. */
  traceparent: string | null;
  /** The parent whose cancel took it (a retry of that parent brings it back); null otherwise. */
  cancelledWith: string | null;
}

export interface WorkerRow {
  id: string;
  host: string;
  pid: number;
  /**
   * The kernel and pid namespace the pid lives in (see lib/machine.ts); null for a worker that did not
   * record one. A peer judges this worker dead by its pid only when its own machine is the same.
   */
  machine: string | null;
  startedAt: number;
  heartbeatAt: number;
  stoppedAt: number | null;
  /** How many runs it executes at once (its --concurrency); null: not recorded (an older worker). */
  slots: number | null;
}

export type AuditRole = 'viewer' | 'operator' | 'local';

export interface AuditEntry {
  id: number;
  /** Epoch seconds, by the store's clock. */
  at: number;
  /** Who: the signed-in name with its role, or the role and channel of a bare token. */
  actor: string;
  /** `local` when no tokens are configured and the control plane answers loopback only. */
  role: AuditRole;
  /** What: start, pause, resume, cancel, retry, expire, resolve, sweep. */
  action: string;
  /** On what: a run id, an idempotency key, or `*` for a sweep. */
  target: string;
  runId: string | null;
  detail: string | null;
}

export type RunLogStream = 'stdout' | 'stderr' | 'worker';

/** One line of a run's log (lib/store/contract/logs.ts): what a command workflow's program printed, or its worker's note. */
export interface RunLogRow {
  runId: string;
  /** The run's lines are numbered from 1 without gaps; only the last K are kept. */
  seq: number;
  /** Epoch seconds, by the worker's clock: when the line was read from the program. */
  at: number;
  stream: RunLogStream;
  line: string;
  workerId: string | null;
  /** The run's take (runs.attempts) whose program printed it. */
  attempt: number | null;
}

/**
 * Which API a model call spoke (lib/gateway/): the route it came in on; `recorded`, a call made without the
 * gateway whose usage the step reported itself (ctx.recordUsage, POST /api/v1/checkpoint/usage).
 */
export type ModelApi = 'openai.chat' | 'openai.responses' | 'openai.embeddings' | 'anthropic.messages' | 'recorded';

/** One model call made through the gateway (lib/store/contract/model-calls.ts): the ledger's unit. */
export interface ModelCallRow {
  id: string;
  /** The key the answer is served under; null for a call sent without one, or retired by a rerun. */
  idemKey: string | null;
  /** The Idempotency-Key the request carried, kept after the call is retired. */
  sentKey: string | null;
  runId: string | null;
  step: number | null;
  api: ModelApi;
  model: string | null;
  fingerprint: string;
  /** `pending`: asked upstream, under the lease; `complete`: the answer is stored. */
  state: 'pending' | 'complete';
  /** `sse`: a streamed answer, stored as its chunks; `json`: one body. */
  framing: 'json' | 'sse';
  leaseToken: string | null;
  leaseExpiresAt: number | null;
  status: number | null;
  headersJson: string | null;
  body: string | null;
  inputTokens: number | null;
  outputTokens: number | null;
  cachedTokens: number | null;
  costUsd: number | null;
  startedAt: number;
  completedAt: number | null;
  retiredAt: number | null;
}
