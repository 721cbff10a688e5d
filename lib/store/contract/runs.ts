/** Runs and workers: queueing, run leases, operator actions, and the workers that execute runs. */
import type { RunLimits } from '../../domain/run-limits';
import type { RunAction, RunRow, RunStatus, WorkerRow } from './rows';
import type { WaitKind } from './waits';
import type { WebhookEventInput } from './webhooks';
import type { WorkflowStore } from './workflows';

/** actOnRun's answer: the run as the action left it. */
export interface RunActed extends RunRow {
  /**
   * A retry's: the runs it brought back with it, each with the parent whose cancel had taken it and whose retry
   * brought it back, a parent before its children. Absent for any other action.
   */
  retriedChildren?: { runId: string; parentId: string }[];
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
  /** Its rows in `committed` of source `executed`, and all its rows there (lib/control/figures.ts). */
  executed: number;
  committed: number;
  /** Its progress's replay counters. */
  skipped: number;
  awaited: number;
  orphanedClaims: number;
  owner: string | null;
  error: string | null;
  createdAt: number | null;
  updatedAt: number;
}

/**
 * A run as the stall judge reads it (lib/control/stalled.ts): its row's status, owner and run lease, nothing
 * joined or counted.
 */
export interface RunHead {
  id: string;
  workflow: string;
  status: RunStatus;
  owner: string | null;
  leaseExpiresAt: number | null;
}

/**
 * Which workers listWorkers reads. Unfiltered, every row the retention kept (WorkerStore.pruneWorkers): the
 * workers page, with a limit. Everything a worker or a request does often asks for less, so its cost follows the
 * live fleet and never the fleet's history.
 */
export interface WorkerFilter {
  /** Only workers not stopped: the peers a beat judges. */
  notStopped?: boolean;
  /**
   * With notStopped: also the stopped workers a running run still names as its owner, the ones the stall judge
   * (lib/control/stalled.ts) must describe.
   */
  orOwningRunning?: boolean;
  /** Only these ids (the holders of the claims on a page). */
  ids?: string[];
  /** At most this many: the not stopped first, then the most recently started. */
  limit?: number;
}

/** What the pick's own columns say of a run's limits (shared/run-limits-sql.ts limitUseOf). */
export interface LimitUse {
  nowS: number;
  concurrency?: { key: string; running: number };
  rateLimit?: { key: string; started: number; oldestAt: number | null };
}

/**
 * Where a queued run stands for a first start under its rate key: its place in line (1: the next the pick would
 * start there; the runs ahead are the workflow's queued runs never started under the key, in the pick's order),
 * and when its slot opens by the store's clock as lib/domain/run-limits.ts rateSlot reckons it (now or before:
 * open). `atLeast`: more runs were ahead than are counted (LINE_COUNTED), so `place` is where the count stopped
 * and `slotAt` the earliest its slot can open. Null in limitUse's answer when no rate limit is given, or the run
 * started before (a rate limit never holds it).
 */
export interface RateLine {
  place: number;
  atLeast: boolean;
  slotAt: number;
}

/**
 * Where a queued run stands for a free place under its concurrency key: `ahead`, how many of the workflow's queued
 * runs under the key the pick gives a free place before it (in its order; those holding a place of their own, or
 * held by the rate limit now, are passed by as the pick passes them), counted up to LINE_COUNTED (`atLeast`: that
 * many or more). Null in limitUse's answer when no concurrency limit is given, the key has no place free, or the run
 * holds a place itself.
 */
export interface PlaceLine {
  ahead: number;
  atLeast: boolean;
}

/** limitUse's answer; null when the run is not there. */
export type RunLimitUse = LimitUse & { rateLine: RateLine | null; placeLine: PlaceLine | null };

/** The processes that execute runs, and how a dead one is told from a paused one. */
export interface WorkerStore {
  registerWorker(worker: {
    id: string;
    host: string;
    pid: number;
    machine?: string | null;
    /** How many runs it executes at once. */
    slots?: number | null;
  }): Promise<void>;
  /**
   * The worker's proof of life in its row. False when there is no row: it was pruned while this worker was silent
   * longer than the retention (a process stopped for a day, then continued); the worker registers again.
   */
  heartbeatWorker(id: string): Promise<boolean>;
  stopWorker(id: string): Promise<void>;
  /** Live first, then newest started. */
  listWorkers(filter?: WorkerFilter): Promise<WorkerRow[]>;

  /**
   * Deletes the rows of workers stopped, or silent, for more than olderThanMs by the store's clock, except any a
   * running run still names as owner (its row is what says who holds the run and since when it is silent).
   * Returns how many rows went. Workers call it at start and then hourly (WAYBILL_WORKER_RETENTION).
   */
  pruneWorkers(olderThanMs: number): Promise<number>;

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

/**
 * Runs, with the workers and the published workflows beside them: the engine's worker loop registers,
 * publishes, then claims and renews runs, so one interface serves its one caller.
 */
export interface RunStore extends WorkerStore, WorkflowStore {
  /** Queues a new run. ConflictError when the id is taken. */
  createRun(run: {
    id: string;
    workflow: string;
    inputJson: string;
    totalSteps: number | null;
    budgetUsd?: number | null;
    /** A child run's parent (ctx.startChild), and whether it outlives the parent's cancel. */
    parentRunId?: string | null;
    detached?: boolean;
    /** Higher is picked first; 0 by default. */
    priority?: number;
    /** Its tags and metadata (RunTagStore), written with the row; checked by the caller (lib/domain/run-tags). */
    tags?: string[];
    metadata?: Record<string, string>;
    /** The W3C trace context its spans continue (lib/tracing.ts); null: none given. */
    traceparent?: string | null;
  }): Promise<RunRow>;

  /**
   * Records the trace context of a run started without one (its first traced execution's run span), so every
   * later execution, on any worker, continues that trace. A run that has one keeps it; an unknown run is a no-op.
   */
  keepTraceparent(id: string, traceparent: string): Promise<void>;

  /**
   * Sets a run's budget (USD) and answers its row; NotFoundError for an unknown run. `ifUnset`: only when it
   * has none (a worker filling in its workflow's default), else the row is answered unchanged.
   */
  setRunBudget(id: string, budgetUsd: number, options?: { ifUnset?: boolean }): Promise<RunRow>;

  getRun(id: string): Promise<RunRow | null>;

  /**
   * A parent's children (ctx.startChild), by runs_parent: how many in each status, and the `first` most recently
   * updated, as the runs list's parent filter orders them.
   */
  childrenOf(
    parentId: string,
    first: number,
  ): Promise<{
    byStatus: Partial<Record<RunStatus, number>>;
    first: Pick<RunRow, 'id' | 'workflow' | 'status' | 'detached'>[];
  }>;

  /** Runs newest first, outside clients' runs included, with keyset pagination on (updatedAt, id). */
  listRuns(filter: {
    status?: RunStatus | 'idle';
    /**
     * Only runs parked on an open wait of this kind (status `waiting`, so outside clients' runs never match).
     * With a `status` other than `waiting`, nothing matches.
     */
    waiting?: WaitKind;
    workflow?: string;
    search?: string;
    owner?: string;
    /** Only the children of this run (ctx.startChild); outside clients' runs never match, as with `owner`. */
    parent?: string;
    /**
     * Only runs carrying every one of these tags, and every one of these metadata key=value pairs (RunTagStore);
     * outside clients' runs never match, as with `owner`. Read from the tags' own indexes, not by a scan of runs.
     */
    tags?: string[];
    meta?: { key: string; value: string }[];
    limit?: number;
    claimTtlMs: number;
    /** Keyset cursor: the last row of the previous page. */
    after?: { updatedAt: number; id: string };
  }): Promise<RunSummary[]>;

  /**
   * Runs of one status (of these workflows), the most recently updated row first, as the stall judge reads them:
   * one range of runs_status_updated, so its cost follows `limit` and the runs of that status, never the store's
   * size. listRuns' summary (progress, figures, claims, outside clients' runs) is what a page shows; this is what a
   * count of stalled runs needs, read every second. Runs rows only: an outside client's run is never stalled.
   */
  listRunHeads(filter: { status: RunStatus; workflows?: string[]; limit: number }): Promise<RunHead[]>;

  /**
   * Takes one runnable run for this worker, in one transaction: queued, or running with a passed run lease
   * or an owner marked dead. Returns null when there is none. The run's `attempts` in the row returned is
   * this execution's fence: pass it to renewRunLease, finishRun and releaseRun.
   *
   * `holding`: the runs this worker is executing now. They are never handed out again, even with their lease
   * passed: a worker that stalled past its lease and woke up still has them in hand, and taking one again
   * would run it twice beside itself. `runId`: take only this run (the drill's workers).
   *
   * Higher priority first, then oldest. A run its workflow's concurrency or rate limit holds back is passed over,
   * decided so that workers on every host together never exceed it. The limits are the workflow's latest
   * publication in the store (publishWorkflows: the newest deployment's, what a held run's reason reads too);
   * `limits`, the worker's own declarations by workflow name, count only for a workflow the store has no
   * publication of (shared/run-limits-sql.ts pickLimits).
   */
  claimRun(request: {
    workerId: string;
    leaseMs: number;
    workflows: string[];
    holding?: string[];
    runId?: string;
    limits?: Record<string, RunLimits>;
  }): Promise<RunRow | null>;

  /**
   * What holds a queued run back under its workflow's limits, by the store's clock: the runs holding places
   * under its concurrency key, the starts within its rate window under its rate key with the oldest's time,
   * and its place in line for a slot there.
   */
  limitUse(runId: string, limits: RunLimits): Promise<RunLimitUse | null>;

  /**
   * limitUse for many runs at once, each under its workflow's entry in `limits` (a run of a workflow not named
   * there, or not in the store, is left out), all read at one moment of the store's clock from one snapshot: the runs
   * of one key count the same places and starts, and their places in a line follow one order. A list of held runs
   * reads them so, in a few statements whatever its length (shared/limit-use.ts).
   */
  limitUses(runIds: readonly string[], limits: Readonly<Record<string, RunLimits>>): Promise<Map<string, RunLimitUse>>;

  /**
   * Extends the run lease; returns the run's status so the worker notices pause/cancel/takeover. With
   * `attempt` (the fence claimRun handed out), only that execution renews: an older one of the same worker
   * id (a process restarted under its id while the old one was stalled) is told it lost the run.
   */
  renewRunLease(
    id: string,
    workerId: string,
    leaseMs: number,
    attempt?: number,
  ): Promise<{ held: boolean; status: RunStatus | null }>;

  /**
   * Ends a run this worker owns (and, with `attempt`, this execution of it). A run paused while its last step
   * ran still completes: its work is done. False when the worker no longer owns it (taken over, or cancelled
   * meanwhile).
   */
  finishRun(
    id: string,
    workerId: string,
    outcome: { status: 'completed' | 'failed' | 'rejected'; error?: string; outputJson?: string },
    attempt?: number,
  ): Promise<boolean>;

  /**
   * Gives a run back (a draining worker, or one told to pause): queued again unless paused/cancelled. With
   * `attempt`, a no-op unless this execution still holds it, so a copy that lost the run never re-queues it
   * under the one that runs it.
   */
  releaseRun(id: string, workerId: string, attempt?: number): Promise<void>;

  /**
   * An operator's action, recorded as an `operator` event. Throws InvalidTransitionError when the run's
   * status does not allow it (e.g. retry of a running run), NotFoundError for an unknown run. `alert`: an alert
   * webhooks' event the action is (a pause at the run's budget), written to their outbox in the same transaction.
   * A retry also retries, in its transaction, the attached children the run's cancel had cancelled, and theirs
   * (lib/store/shared/children.ts), and opens the run's waits for them again: RunActed's `retriedChildren`.
   */
  actOnRun(id: string, action: RunAction, actor: string, alert?: WebhookEventInput): Promise<RunActed>;
}
