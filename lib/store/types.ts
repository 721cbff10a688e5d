/**
 * The one interface every backend implements. The checkpoint core talks only to this; the SQLite and
 * PostgreSQL files are two answers to it. Each method is one short transaction (or one statement), so a
 * process killed at any instant leaves the store either before or after it, never between.
 *
 * Times crossing this interface are epoch seconds, as in the tables. Durations are milliseconds.
 * Results and states cross as JSON text: the core serializes once, the store never parses on the hot path.
 */

import type { MetricsSnapshot } from './types-observability';
import type { WorkflowStore } from './types-workflows';

export * from './types-observability';
export * from './types-audit';
export * from './types-workflows';

export type Outcome =
  | 'executed' | 'skipped' | 'awaited' | 'failed' | 'expired' | 'resolved' | 'lease_lost' | 'operator' | 'key_reuse';

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
  source: 'executed' | 'manual';
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

/** Counter deltas folded into a progress write, so that skips never cost a transaction of their own. */
export interface ProgressWrite {
  runId: string;
  step: number;
  stateJson: string;
  executed: number;
  skipped: number;
  awaited: number;
  /** How long the writer's previous progress write took (ms), kept as the run's measured save cost. */
  saveMs?: number | null;
}

export interface ClaimRequest {
  idemKey: string;
  runId: string;
  /** Fresh random fencing token; only its holder can commit or renew. */
  token: string;
  workerId: string | null;
  step: number | null;
  attempt: number;
  leaseMs: number;
  /** How long a claim with no lease column (written by an outside client) lives after claimed_at. */
  claimTtlMs: number;
}

export type ClaimOutcome =
  | { kind: 'committed'; row: CommittedRow }
  | { kind: 'claimed'; attempt: number; leaseExpiresAt: number; tookOverFrom: ClaimRow | null }
  /** Someone else holds a live lease. msUntilExpiry is measured by the store's clock, not the caller's. */
  | { kind: 'held'; holder: ClaimRow; msUntilExpiry: number };

export interface CommitRequest {
  idemKey: string;
  token: string;
  runId: string;
  resultJson: string;
  step: number | null;
  fingerprint: string | null;
  workerId: string | null;
  durationMs: number;
  /** Written in the commit transaction itself: one transaction per executed step, not two. */
  progress?: ProgressWrite;
  /**
   * The caller's next key, claimed in the same transaction once the commit has succeeded: a loop that knows
   * its next step pays one transaction (one disk flush) per executed step instead of two.
   */
  next?: ClaimRequest;
  /**
   * An earlier attempt of this same commit (same token, result and duration) failed without an answer and may
   * have landed. If the claim is gone, a committed row matching this request is that attempt's own, and the
   * commit succeeded; its next claim, if it asked for one, is then unknown (null).
   */
  mayHaveLanded?: boolean;
}

/** What a commit answers, decided in its own transaction. */
export interface CommitOutcome {
  /**
   * The `next` key's claim, as claim() would decide it. Null without `next`; when a lost reply left it unknown
   * (the caller claims again with the same token); or when the run is paused or cancelled: no step after this
   * one will run, so none is claimed ahead.
   */
  next: ClaimOutcome | null;
  /**
   * The run's status in its runs row, null when it has none (an outside client's run). Read in the commit's
   * transaction, so a loop learns of a pause or a cancel with the commit it makes anyway, at no round trip.
   */
  runStatus: RunStatus | null;
}

/** A library loop (a Checkpoint given a workflow) declares its run as it starts. */
export interface LoopRunStart {
  runId: string;
  workflow: string;
  totalSteps: number | null;
  /** The run's input as JSON, shown on its page; 'null' when the loop gives none. */
  inputJson: string;
  /** The loop's worker id, shown as the run's owner. */
  owner: string | null;
}

/** How a library loop's run ends: its steps are done, it failed, or it stopped for a pause or a cancel. */
export interface LoopRunEnd {
  runId: string;
  owner: string | null;
  outcome: 'completed' | 'failed' | 'stopped';
  error?: string | null;
  outputJson?: string | null;
}

export interface ReleaseRequest {
  idemKey: string;
  token: string;
  runId: string;
  step: number | null;
  workerId: string | null;
  durationMs: number;
  /** Why the side effect failed, recorded as a `failed` event; null for a claim taken ahead and never used. */
  error: string | null;
}

export interface ResolveRequest {
  idemKey: string;
  resultJson: string;
  /** Who resolved it and why, recorded in the run's timeline. */
  actor: string;
  note?: string;
  /** For a claim with no lease column, which lives claim TTL after claimed_at, as expireClaim judges it. */
  claimTtlMs: number;
  /** Resolve a claim whose lease is live, as expireClaim's force does. */
  force?: boolean;
  /**
   * The attempt of the claim the operator saw. A claim taken over since has another attempt and is refused,
   * forced or not: the operator's result was decided about the previous holder's side effect.
   */
  attempt?: number;
}

export interface Store {
  readonly dialect: 'sqlite' | 'postgres';

  /** The run's position, or null when nothing was saved yet. */
  loadProgress(runId: string): Promise<ProgressRow | null>;

  /** Upserts the run's position and adds the counter deltas; one transaction. */
  saveProgress(write: ProgressWrite): Promise<void>;

  /**
   * Phase 1 of the protocol, in one transaction: the committed result if the key is committed; otherwise a
   * new claim, or a takeover of a claim whose lease passed (recording an `expired` event); otherwise the
   * live holder. A released claim does not exist, so it is simply claimed again.
   */
  claim(request: ClaimRequest): Promise<ClaimOutcome>;

  /** Extends the lease while the side effect runs. False when the claim is no longer ours (fenced). */
  renewClaim(idemKey: string, token: string, leaseMs: number): Promise<boolean>;

  /**
   * Phase 3, one transaction: delete the claim where the token is ours, insert the result, and write the
   * progress if given. Throws LeaseLostError when the claim is gone or held by another token, or when the
   * key was committed meanwhile (an operator resolved it): the transaction rolls back, and only a
   * `lease_lost` event is recorded, after it, so the timeline shows the refused commit.
   *
   * With `next`, answers that key's claim outcome, decided in the commit's transaction exactly as claim()
   * would. Null without `next`, or when a lost connection left it unknown whether the claim was made: the
   * caller then claims with the same token, which the store recognises as its own. With it, the run's status.
   */
  commit(request: CommitRequest): Promise<CommitOutcome>;

  /** The side effect failed (or a claim taken ahead went unused): delete our claim, token-checked, and record a `failed` event when there is an error. */
  releaseClaim(request: ReleaseRequest): Promise<void>;

  /** One committed row, or null. */
  getCommitted(idemKey: string): Promise<CommittedRow | null>;

  /** How many keys a run has committed. */
  countCommitted(runId: string): Promise<number>;

  /** Committed rows of a run in step order, then key order. */
  listCommitted(runId: string, options?: { limit?: number; afterKey?: string }): Promise<CommittedRow[]>;

  /** Claims, optionally of one run or only the orphaned ones (lease passed by the store's clock). */
  listClaims(options?: {
    runId?: string; orphanedOnly?: boolean; claimTtlMs: number;
    /** A page of at most `limit` claims after the keyset cursor, in (claimedAt, idemKey) order. */
    limit?: number; after?: { claimedAt: number; idemKey: string };
  }): Promise<ClaimRow[]>;

  /** The claim on one key, if any, with whether it is orphaned by the store's clock. */
  getClaim(idemKey: string, options: { claimTtlMs: number }): Promise<ClaimRow | null>;

  /**
   * An operator gives up on a claim: the row is deleted, so any client can claim the key again, and an
   * `expired` event is recorded. Only an orphaned claim is expired unless `force` is set: `live` says the
   * lease has not passed, `missing` that there is no claim on the key.
   */
  expireClaim(idemKey: string, options: { actor: string; force?: boolean; claimTtlMs: number }): Promise<'expired' | 'missing' | 'live'>;

  /**
   * An operator commits a result by hand (`source = manual`) for a claim whose side effect is in doubt,
   * deleting the claim and recording a `resolved` event; returns the claim's run. The claim's holder can no
   * longer commit (its token is gone). Whether the claim is orphaned (and still the attempt given) is decided
   * in the transaction that deletes it, by the store's clock: a check made by an earlier read could be
   * overtaken by a worker taking the claim over. Refusals write nothing: NotFoundError when there is no claim
   * on the key, ClaimNotOrphanedError when its lease is live (unless `force`) or its attempt is not the one
   * given, LeaseLostError when the key is already committed.
   */
  resolveClaim(request: ResolveRequest): Promise<{ runId: string }>;

  /** Appends an event (an operator's note, a refused key reuse) to a run's timeline. */
  recordEvent(event: { runId: string; outcome: Outcome; idemKey?: string | null; step?: number | null; workerId?: string | null; detail?: string | null }): Promise<void>;

  /** Append-only history of a run, oldest first. */
  listEvents(runId: string, options?: { limit?: number; afterId?: number }): Promise<StepEvent[]>;

  /**
   * A library loop's run starts (or restarts), in one transaction: created `running` when it has no row;
   * set `running` again (attempts + 1) when queued, running, failed or completed; left alone when paused or
   * cancelled, whose status is answered so the loop does not start. ConflictError when the row is another
   * workflow's, or a worker holds it under a live run lease. The loop's only write before its steps.
   */
  beginLoopRun(request: LoopRunStart): Promise<{ status: RunStatus; created: boolean }>;

  /**
   * A library loop's run ends: `completed` (also when paused during its last step: its work is done) or
   * `failed` where it is still this owner's; `stopped` (it saw a pause or cancel) gives up ownership only.
   * Returns the status the run is left in, null when it has no row.
   */
  endLoopRun(request: LoopRunEnd): Promise<RunStatus | null>;

  /** Releases connections; the store is unusable afterwards. */
  close(): Promise<void>;
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
}

export type RunStatus = 'queued' | 'running' | 'paused' | 'completed' | 'failed' | 'cancelled';
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
}

/** A run as lists show it: its row joined with its progress and claims. Outside clients' runs have no
 * runs row; they are listed with workflow `external` and a status read from their claims. */
export interface RunSummary {
  id: string;
  workflow: string;
  /** `idle`: an outside client's run with no claim in flight (its progress is all there is to show). */
  status: RunStatus | 'idle';
  step: number;
  totalSteps: number | null;
  executed: number;
  skipped: number;
  awaited: number;
  orphanedClaims: number;
  owner: string | null;
  error: string | null;
  createdAt: number | null;
  updatedAt: number;
}

export interface WorkerRow {
  id: string;
  host: string;
  pid: number;
  /**
   * The kernel and pid namespace the pid lives in (see lib/store/machine.ts); null for a worker that did not
   * record one. A peer judges this worker dead by its pid only when its own machine is the same.
   */
  machine: string | null;
  startedAt: number;
  heartbeatAt: number;
  stoppedAt: number | null;
}

/** Runs and workers; the published workflows ride along, as workers publish them when they register. */
export interface RunStore extends WorkflowStore {
  /** Queues a new run. ConflictError when the id is taken. */
  createRun(run: { id: string; workflow: string; inputJson: string; totalSteps: number | null }): Promise<RunRow>;

  getRun(id: string): Promise<RunRow | null>;

  /** Runs newest first, outside clients' runs included, with keyset pagination on (updatedAt, id). */
  listRuns(filter: {
    status?: RunStatus | 'idle'; workflow?: string; search?: string; owner?: string; limit?: number; claimTtlMs: number;
    /** Keyset cursor: the last row of the previous page. */
    after?: { updatedAt: number; id: string };
  }): Promise<RunSummary[]>;

  /**
   * Takes one runnable run for this worker, in one transaction: queued, or running with a passed run lease
   * or an owner marked dead. Returns null when there is none. The run's `attempts` in the row returned is
   * this execution's fence: pass it to renewRunLease, finishRun and releaseRun.
   *
   * `holding`: the runs this worker is executing now. They are never handed out again, even with their lease
   * passed: a worker that stalled past its lease and woke up still has them in hand, and taking one again
   * would run it twice beside itself. `runId`: take only this run (the drill's workers).
   */
  claimRun(request: { workerId: string; leaseMs: number; workflows: string[]; holding?: string[]; runId?: string }): Promise<RunRow | null>;

  /**
   * Extends the run lease; returns the run's status so the worker notices pause/cancel/takeover. With
   * `attempt` (the fence claimRun handed out), only that execution renews: an older one of the same worker
   * id (a process restarted under its id while the old one was stalled) is told it lost the run.
   */
  renewRunLease(id: string, workerId: string, leaseMs: number, attempt?: number): Promise<{ held: boolean; status: RunStatus | null }>;

  /**
   * Ends a run this worker owns (and, with `attempt`, this execution of it). A run paused while its last step
   * ran still completes: its work is done. False when the worker no longer owns it (taken over, or cancelled
   * meanwhile).
   */
  finishRun(id: string, workerId: string, outcome: { status: 'completed' | 'failed'; error?: string; outputJson?: string }, attempt?: number): Promise<boolean>;

  /**
   * Gives a run back (a draining worker, or one told to pause): queued again unless paused/cancelled. With
   * `attempt`, a no-op unless this execution still holds it, so a copy that lost the run never re-queues it
   * under the one that runs it.
   */
  releaseRun(id: string, workerId: string, attempt?: number): Promise<void>;

  /**
   * An operator's action, recorded as an `operator` event. Throws InvalidTransitionError when the run's
   * status does not allow it (e.g. retry of a running run), NotFoundError for an unknown run.
   */
  actOnRun(id: string, action: RunAction, actor: string): Promise<RunRow>;

  registerWorker(worker: { id: string; host: string; pid: number; machine?: string | null }): Promise<void>;
  heartbeatWorker(id: string): Promise<void>;
  stopWorker(id: string): Promise<void>;
  listWorkers(): Promise<WorkerRow[]>;

  /**
   * Proof of life the worker holds while it runs, which its process's death releases wherever it ran
   * (PostgreSQL: a session advisory lock). A backend with no such thing holds nothing.
   */
  holdLiveness(workerId: string): Promise<{ release(): Promise<void> }>;

  /**
   * For each worker id: `held` (some process holds its proof of life), `free` (none does: the process is gone,
   * or lost its connection), or `unknown` (this backend cannot tell, as SQLite across machines).
   */
  livenessOf(workerIds: string[]): Promise<Map<string, 'held' | 'free' | 'unknown'>>;

  /**
   * A worker is known dead (its pid is gone on its machine): mark it stopped, and expire the claims it held
   * so its runs resume at once instead of after their leases. Only call with proof of death: a paused
   * worker is fenced by tokens, but expiring its claims would make its in-doubt side effects run again.
   */
  markWorkerDead(id: string, reason: string): Promise<number>;
}

export interface RunStats {
  byStatus: Record<RunStatus | 'idle', number>;
  /** Summed over every run's progress counters. */
  executed: number;
  skipped: number;
  awaited: number;
  /** Keys committed since the given time, across all runs. */
  committedSince: number;
  orphanedClaims: number;
}

export interface StepTiming {
  step: number | null;
  idemKey: string;
  committedAt: number;
  durationMs: number | null;
  source: 'executed' | 'manual';
}

/** Committed steps of a run grouped by step range, for a chart that never gets more points than buckets. */
export interface StepBucket {
  fromStep: number;
  toStep: number;
  /** Committed rows in the range (each step once, unless it was committed under several keys). */
  count: number;
  avgMs: number | null;
  maxMs: number | null;
}

/** What happened in one slice of a run's lifetime: executed commits, and skips and awaits from their events. */
export interface CommitBucket {
  /** The slice's end, epoch seconds. */
  t: number;
  executed: number;
  skipped: number;
  awaited: number;
}

/** What the control plane reads to explain a run: aggregates, series and warnings, computed in the store. */
/**
 * Keys that name one piece of work: `step` when they share a step number; otherwise (`step` null) why they are
 * taken for one: the same input fingerprint, or keys equal but for the time they ran or an attempt counter.
 */
export interface UnstableKeyGroup {
  step: number | null;
  keys: string[];
  why: 'step' | 'fingerprint' | 'time' | 'attempt';
}

export interface InsightStore {
  /** Counts across all runs, outside clients' included. */
  runStats(options: { sinceSeconds: number; claimTtlMs: number }): Promise<RunStats>;

  /** A run's committed steps without their results, in step order: for charts. At most `limit` rows. */
  listStepTimings(runId: string, options?: { limit?: number }): Promise<StepTiming[]>;

  /**
   * A run's committed steps in at most `buckets` ranges of equal width, in step order; rows with no step
   * are left out. One GROUP BY in the database: a 100,000-step run never crosses the wire row by row.
   */
  stepTimingBuckets(runId: string, options: { buckets: number }): Promise<StepBucket[]>;

  /** A run's executed commits and folded skip/await events in at most `buckets` equal slices of time. */
  commitBuckets(runId: string, options: { buckets: number }): Promise<CommitBucket[]>;

  /** The last `limit` committed steps of a run (the page's order: step, then key), returned in that order. */
  recentSteps(runId: string, options: { limit: number }): Promise<StepTiming[]>;

  /** The last `limit` events of a run, optionally of one outcome, oldest first. */
  recentEvents(runId: string, options: { limit: number; outcome?: Outcome }): Promise<StepEvent[]>;

  /** How many claims there are (of one run, or all), and how many of them are orphaned (lease passed by the store's clock). */
  countClaims(options: { claimTtlMs: number; runId?: string }): Promise<{ total: number; orphaned: number }>;

  /** Committed rows of a run whose key contains `query`, in step order. */
  searchCommitted(runId: string, query: string, options?: { limit?: number }): Promise<CommittedRow[]>;

  /**
   * Work committed under more than one key: the keys changed across resumes (time or attempt mixed in), so
   * idempotency was void for it. Steps first, by step; then stepless groups (insights-unstable.ts has the rules).
   */
  unstableKeys(runId: string, options?: { limit?: number }): Promise<UnstableKeyGroup[]>;

  /** The latest committed_at of a run's rows, or null: an outside client's run without progress is dated by it. */
  lastCommittedAt(runId: string): Promise<number | null>;

  /**
   * Counts and histograms for a metrics scrape, computed in the database (buckets are counted with SQL, no
   * rows are loaded). `boundsMs` are the histogram bucket bounds, ascending.
   */
  metricsSnapshot(options: {
    claimTtlMs: number; boundsMs: readonly number[];
    /**
     * PostgreSQL: committed rows and events younger than this are counted by a later scrape, so that a
     * transaction still in flight when one scrape reads cannot be skipped by the next. Default 10 s.
     */
    settleMs?: number;
  }): Promise<MetricsSnapshot>;
}
