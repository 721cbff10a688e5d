/**
 * Runs and workers on PostgreSQL: queueing, run leases, operator actions, with sqlite-runs.ts's semantics.
 * A worker takes a run with FOR UPDATE SKIP LOCKED in one statement (postgres-runs-sql.ts), so workers on
 * many hosts never block each other or take the same run, and every lease is judged by the database clock.
 *
 * Transient failures are retried. Most statements are safe to run twice (a renewal, an upsert, an update
 * fenced by owner). Four would answer wrongly after a lost connection whose statement had in fact
 * committed, so after such a loss they first recognise their own earlier attempt:
 *
 * - createRun: the id is taken by a row with this call's workflow, input and total, created since the
 *   call began: that is our run, not a conflict. (An identical run queued by someone else in that second
 *   cannot be told apart, and needs no telling: the run asked for is queued once.)
 * - claimRun: a running run owned by this worker that this store never handed to it is the one the lost
 *   attempt took: it is handed over now, instead of waiting out its lease while we take another. Runs
 *   the worker is executing are excluded by id, so one is never handed out twice.
 * - finishRun: the run already ended the way we asked since the call began: true, not "taken over".
 * - actOnRun: the run's latest operator event is this action by this actor, since the call began: done,
 *   not InvalidTransition, and not done twice.
 */
import { performance } from 'node:perf_hooks';
import { ConflictError, InvalidTransitionError, NotFoundError } from '../errors';
import { PostgresInsights } from './postgres-insights';
import { holdLiveness, livenessOf, type LivenessHold } from './postgres-liveness';
import { mayHaveRun, withRetry } from './postgres-retry';
import * as sql from './postgres-runs-sql';
import { LIST_PUBLISHED_SQL, LIVE_SERVERS_SQL, publishPostgres, SET_TOTAL_SQL } from './postgres-workflows';
import { TRANSITIONS } from './transitions';
import type { PublishedWorkflow, RunAction, RunRow, RunStatus, RunStore, RunSummary, WorkerRow, WorkflowPublication } from './types';
import { withServers } from './workflow-servers';

/**
 * Added to "since the call began" when recognising an earlier attempt: the database's now() for the retry
 * is taken a network hop after we measure. A generous second; the other conditions do the telling apart.
 */
const SLACK_S = 1;

interface Attempt {
  /** An earlier attempt's connection died: its statement may have committed. */
  outcomeUnknown: boolean;
  /** Seconds since the call began, slack included. */
  sinceS: number;
}

type RunOutcome = { status: 'completed' | 'failed'; error?: string; outputJson?: string };

export abstract class PostgresRunStore extends PostgresInsights implements RunStore {
  /** Per worker, the runs claimRun handed it that it has not finished or released yet. */
  private readonly handedOut = new Map<string, Set<string>>();

  async createRun(run: { id: string; workflow: string; inputJson: string; totalSteps: number | null }): Promise<RunRow> {
    const values = [run.id, run.workflow, run.inputJson, run.totalSteps];
    const row = await this.attempts('createRun', async ({ outcomeUnknown, sinceS }) => {
      const created = (await this.pool.query<RunRow>(
        { name: 'waybill_run_create', text: sql.CREATE_RUN_SQL, values: [...values, this.skew()] })).rows[0];
      if (created || !outcomeUnknown) return created;
      return (await this.pool.query<RunRow>({ text: sql.CREATED_SQL, values: [...values, sinceS, this.skew()] })).rows[0];
    });
    if (!row) throw new ConflictError(`run ${run.id}`);
    return row;
  }

  async getRun(id: string): Promise<RunRow | null> {
    return (await this.query<RunRow>('waybill_run_get', sql.GET_RUN_SQL, [id])).rows[0] ?? null;
  }

  async listRuns(filter: Parameters<RunStore['listRuns']>[0]): Promise<RunSummary[]> {
    const search = filter.search ? `%${filter.search.replace(/[\\%_]/g, (c) => `\\${c}`)}%` : null;
    const limit = filter.limit ?? 100;
    const after = [filter.after?.updatedAt ?? null, filter.after?.id ?? null];
    const page = (await this.query<RunSummary>(undefined, sql.LIST_RUNS_SQL, [filter.claimTtlMs / 1000, this.skew(),
      filter.status ?? null, filter.workflow ?? null, search, filter.owner ?? null, limit, ...after])).rows;
    // Outside clients' runs with only committed rows, as sqlite-runs.ts finds them (an `idle` external run).
    if ((filter.status ?? 'idle') !== 'idle' || (filter.workflow ?? 'external') !== 'external' || filter.owner) return page;
    const values = [filter.status ?? null, filter.workflow ?? null, search, limit, ...after];
    const lone = page.length === limit
      ? await this.query<RunSummary>(undefined, sql.LONE_SINCE_SQL, [...values, page[page.length - 1]!.updatedAt])
      : await this.query<RunSummary>(undefined, sql.LONE_ALL_SQL, values);
    if (lone.rows.length === 0) return page;
    const listed = new Set(page.map((r) => r.id));
    return [...page, ...lone.rows.filter((r) => !listed.has(r.id))]
      .sort((a, b) => b.updatedAt - a.updatedAt || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)).slice(0, limit);
  }

  async claimRun(request: Parameters<RunStore['claimRun']>[0]): Promise<RunRow | null> {
    const held = this.held(request.workerId);
    const holding = request.holding ?? [];
    const lease = request.leaseMs / 1000;
    const row = await this.attempts('claimRun', async ({ outcomeUnknown }) => {
      if (outcomeUnknown) {
        const adopted = (await this.pool.query<RunRow>(
          { text: sql.ADOPT_RUN_SQL, values: [request.workerId, [...held, ...holding], lease, this.skew()] })).rows[0];
        if (adopted) return adopted;
      }
      return (await this.pool.query<RunRow>({ name: 'waybill_run_claim', text: sql.CLAIM_RUN_SQL,
        values: [request.workerId, request.workflows, lease, this.skew(), holding, request.runId ?? null] })).rows[0];
    });
    if (!row) return null;
    held.add(row.id);
    return row;
  }

  async renewRunLease(id: string, workerId: string, leaseMs: number, attempt?: number): Promise<{ held: boolean; status: RunStatus | null }> {
    const renewed = await this.query('waybill_run_renew', sql.RENEW_RUN_SQL, [id, workerId, leaseMs / 1000, this.skew(), attempt ?? null]);
    if (renewed.rowCount === 1) return { held: true, status: 'running' };
    // Read afresh: the status that made the renewal miss may be newer than the renewal's snapshot.
    return { held: false, status: (await this.getRun(id))?.status ?? null };
  }

  async finishRun(id: string, workerId: string, outcome: RunOutcome, attempt?: number): Promise<boolean> {
    const error = outcome.error ?? null;
    const output = outcome.outputJson ?? null;
    try {
      return await this.attempts('finishRun', async ({ outcomeUnknown, sinceS }) => {
        const finished = await this.pool.query({ name: 'waybill_run_finish', text: sql.FINISH_RUN_SQL,
          values: [id, workerId, outcome.status, error, output, this.skew(), attempt ?? null] });
        if (finished.rowCount === 1) return true;
        if (!outcomeUnknown) return false;
        return (await this.pool.query({ text: sql.FINISHED_SQL,
          values: [id, outcome.status, error, output, sinceS, this.skew()] })).rowCount === 1;
      });
    } finally {
      // Whatever the answer, the caller stops executing the run once it asked to finish it.
      this.held(workerId).delete(id);
    }
  }

  async releaseRun(id: string, workerId: string, attempt?: number): Promise<void> {
    try {
      await this.query('waybill_run_release', sql.RELEASE_RUN_SQL, [id, workerId, this.skew(), attempt ?? null]);
    } finally {
      this.held(workerId).delete(id);
    }
  }

  async actOnRun(id: string, action: RunAction, actor: string): Promise<RunRow> {
    const { from, to } = TRANSITIONS[action];
    const result = await this.attempts('actOnRun', async ({ outcomeUnknown, sinceS }) => {
      if (outcomeUnknown) {
        const acted = (await this.pool.query<RunRow>({ text: sql.ACTED_SQL,
          values: [id, `${action} by ${actor}: `, ` → ${to}`, sinceS, this.skew()] })).rows[0];
        if (acted) return { from: null, ...acted };
      }
      return (await this.pool.query<{ from: RunStatus } & RunRow>({ name: 'waybill_run_act', text: sql.ACT_SQL,
        values: [id, from, to, action, actor, this.skew()] })).rows[0];
    });
    if (!result) throw new NotFoundError(`run ${id}`);
    const { from: status, ...row } = result;
    // A run whose status does not allow the action comes back with its status and no updated row.
    if (row.id === null) throw new InvalidTransitionError(id, action, status!);
    return row;
  }

  async registerWorker(worker: Parameters<RunStore['registerWorker']>[0]): Promise<void> {
    await this.query('waybill_worker_register', sql.REGISTER_WORKER_SQL,
      [worker.id, worker.host, worker.pid, this.skew(), worker.machine ?? null]);
  }

  async heartbeatWorker(id: string): Promise<void> {
    await this.query('waybill_worker_heartbeat', sql.HEARTBEAT_WORKER_SQL, [id, this.skew()]);
  }

  async stopWorker(id: string): Promise<void> {
    await this.query('waybill_worker_stop', sql.STOP_WORKER_SQL, [id, this.skew()]);
  }

  async listWorkers(): Promise<WorkerRow[]> {
    return (await this.query<WorkerRow>('waybill_worker_list', sql.LIST_WORKERS_SQL, [])).rows;
  }

  /** Retried whole: the upserts and the served list are idempotent. */
  async publishWorkflows(workerId: string, workflows: WorkflowPublication[]): Promise<void> {
    await withRetry('publishWorkflows', () => this.inTransaction((client) => publishPostgres(client, workerId, workflows, this.skew())));
  }

  async listPublishedWorkflows(options: { liveWithinMs: number }): Promise<PublishedWorkflow[]> {
    const [rows, live] = await Promise.all([
      this.query<Omit<PublishedWorkflow, 'servedBy'>>('waybill_workflow_list', LIST_PUBLISHED_SQL, []),
      this.query<{ id: string; workflowsJson: string }>('waybill_workflow_servers', LIVE_SERVERS_SQL, [options.liveWithinMs / 1000, this.skew()]),
    ]);
    return withServers(rows.rows, live.rows);
  }

  async setRunTotal(id: string, workerId: string, totalSteps: number): Promise<void> {
    await this.query('waybill_run_set_total', SET_TOTAL_SQL, [totalSteps, id, workerId]);
  }

  holdLiveness(workerId: string): Promise<LivenessHold> {
    return holdLiveness(this.pool, workerId);
  }

  livenessOf(workerIds: string[]): Promise<Map<string, 'held' | 'free'>> {
    return withRetry('livenessOf', () => livenessOf(this.pool, workerIds));
  }

  /**
   * Retried as is: a second run finds the worker stopped and its claims gone, and changes nothing. It then
   * counts 0, where the lost first attempt released them; the count is only ever reported.
   */
  async markWorkerDead(id: string, reason: string): Promise<number> {
    return (await this.query<{ n: number }>(undefined, sql.MARK_WORKER_DEAD_SQL, [id, reason, this.skew()])).rows[0]!.n;
  }

  private held(workerId: string): Set<string> {
    let runs = this.handedOut.get(workerId);
    if (!runs) this.handedOut.set(workerId, (runs = new Set()));
    return runs;
  }

  /** withRetry, telling each attempt whether an earlier one's outcome is unknown and since when to look. */
  private async attempts<T>(what: string, fn: (attempt: Attempt) => Promise<T>): Promise<T> {
    const began = performance.now();
    let outcomeUnknown = false;
    return withRetry(what, () => fn({ outcomeUnknown, sinceS: (performance.now() - began) / 1000 + SLACK_S }),
      { onTransient: (error) => { outcomeUnknown ||= mayHaveRun(error); } });
  }
}
