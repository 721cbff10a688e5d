/**
 * Runs and workers on SQLite: queueing, run leases, operator actions. A run lease is a column claimed by
 * a conditional UPDATE inside BEGIN IMMEDIATE, so two workers can never both take one run.
 */
import type Database from 'better-sqlite3';
import type { Clock } from '../clock';
import { ConflictError, InvalidTransitionError, NotFoundError } from '../errors';
import { OUTSIDE_STATUS_SQL } from './outside-runs';
import { guard } from './sqlite-base';
import { listPublishedSqlite, publishSqlite, setTotalSqlite } from './sqlite-workflows';
import { SqliteInsights } from './sqlite-insights';
import { TRANSITIONS } from './transitions';
import type { PublishedWorkflow, RunAction, RunRow, RunStatus, RunStore, RunSummary, WorkerRow, WorkflowPublication } from './types';

const RUN_COLUMNS = `id, workflow, input_json AS inputJson, status, total_steps AS totalSteps, owner,
  lease_expires_at AS leaseExpiresAt, attempts, error, output_json AS outputJson, created_at AS createdAt,
  updated_at AS updatedAt, started_at AS startedAt, finished_at AS finishedAt`;

/** A run's place in the list: the later of its row's and its progress's update (an outside client's: its claims'). */
const PLACE = `CASE WHEN r.id IS NULL
  THEN max(p.updated_at, coalesce((SELECT max(c.claimed_at) FROM claims c WHERE c.run_id = p.run_id), 0))
  ELSE max(r.updated_at, coalesce(p.updated_at, 0)) END`;
const AFTER = (id: string) => `(@afterAt IS NULL OR ${PLACE} < @afterAt OR (${PLACE} = @afterAt AND ${id} > @afterId))`;
const RUN_FILTER = `(@status IS NULL OR r.status = @status) AND (@workflow IS NULL OR r.workflow = @workflow)
  AND (@owner IS NULL OR r.owner = @owner)`;

/**
 * The runs that can be on the page, so the summary is computed for a few hundred runs, not all of them.
 * A run's place is the later of two times, and the first `limit` runs by that are all among the first
 * `limit` by either time alone (a run passed over in both would have `limit` runs ahead of it), so it is
 * enough to read the top of two indexes, runs_updated and progress_updated, each with the page's filters
 * and cursor applied exactly; plus outside clients' claimed runs, as few as the claims in flight.
 */
const CANDIDATES = `cand(id) AS (
  SELECT id FROM (SELECT r.id FROM runs r LEFT JOIN progress p ON p.run_id = r.id
    WHERE ${RUN_FILTER} AND (@search IS NULL OR r.id LIKE @search ESCAPE '\\') AND ${AFTER('r.id')}
    ORDER BY r.updated_at DESC, r.id LIMIT @limit)
  UNION
  SELECT id FROM (SELECT p.run_id AS id FROM progress p LEFT JOIN runs r ON r.id = p.run_id
    WHERE CASE WHEN r.id IS NULL
        THEN (@status IS NULL OR @status = ${OUTSIDE_STATUS_SQL('p.run_id')})
          AND (@workflow IS NULL OR @workflow = 'external') AND @owner IS NULL
        ELSE ${RUN_FILTER} END
      AND (@search IS NULL OR p.run_id LIKE @search ESCAPE '\\') AND ${AFTER('p.run_id')}
    ORDER BY p.updated_at DESC, p.run_id LIMIT @limit)
  UNION
  SELECT c.run_id FROM claims c WHERE NOT EXISTS (SELECT 1 FROM runs r WHERE r.id = c.run_id))`;

/** Outside clients' runs have progress or claims but no runs row; they are listed all the same. */
const SUMMARY_SQL = `
  SELECT r.id, r.workflow, r.status, coalesce(p.step, 0) AS step, r.total_steps AS totalSteps,
    coalesce(p.executed, 0) AS executed, coalesce(p.skipped, 0) AS skipped, coalesce(p.awaited, 0) AS awaited,
    (SELECT count(*) FROM claims c WHERE c.run_id = r.id
       AND coalesce(c.lease_expires_at, c.claimed_at + @ttl) <= @now) AS orphanedClaims,
    r.owner, r.error, r.created_at AS createdAt, max(r.updated_at, coalesce(p.updated_at, 0)) AS updatedAt
  FROM runs r LEFT JOIN progress p ON p.run_id = r.id
  WHERE r.id IN (SELECT id FROM cand)
  UNION ALL
  SELECT x.run_id, 'external', ${OUTSIDE_STATUS_SQL('x.run_id')},
    coalesce(p.step, 0), NULL, coalesce(p.executed, 0), coalesce(p.skipped, 0), coalesce(p.awaited, 0),
    (SELECT count(*) FROM claims c WHERE c.run_id = x.run_id
       AND coalesce(c.lease_expires_at, c.claimed_at + @ttl) <= @now),
    NULL, NULL, NULL,
    max(coalesce(p.updated_at, 0), coalesce((SELECT max(claimed_at) FROM claims c WHERE c.run_id = x.run_id), 0))
  FROM (SELECT id AS run_id FROM cand) x
  LEFT JOIN progress p ON p.run_id = x.run_id
  WHERE NOT EXISTS (SELECT 1 FROM runs r WHERE r.id = x.run_id)`;

const PAGE_FILTER = `(@status IS NULL OR status = @status) AND (@workflow IS NULL OR workflow = @workflow)
  AND (@search IS NULL OR id LIKE @search ESCAPE '\\') AND (@owner IS NULL OR owner = @owner)
  AND (@afterAt IS NULL OR updatedAt < @afterAt OR (updatedAt = @afterAt AND id > @afterId))`;

const PAGE_SQL = `WITH ${CANDIDATES} SELECT * FROM (${SUMMARY_SQL}) WHERE ${PAGE_FILTER} ORDER BY updatedAt DESC, id LIMIT @limit`;

/**
 * Outside clients' runs that have nothing but committed rows (no progress, no claim): no index finds them by
 * run, so one of two reads looks for them, each bounded by something other than the table's size.
 *
 * - A full page: among the commits between its last run's place (@floor) and the cursor (@upto). A run whose
 *   latest commit is older than @floor is beaten by a full page of others and cannot be on it, so this reads
 *   the commits of the page's own time span (committed_at's index, forced: grouping by run_id would otherwise
 *   walk committed_run_step whole); a run with a commit past the cursor was on an earlier page.
 * - A page that is not full (the last, or one a filter leaves short): every run id in committed once, by
 *   skipping through committed_run_step from one id to the next (one seek per run, not per row), less those
 *   that have a runs, progress or claims row.
 */
const LONE = (from: string, also = '') => `SELECT * FROM (SELECT l.id, 'external' AS workflow, ${OUTSIDE_STATUS_SQL('l.id')} AS status,
    0 AS step, NULL AS totalSteps, 0 AS executed, 0 AS skipped, 0 AS awaited, 0 AS orphanedClaims, NULL AS owner,
    NULL AS error, NULL AS createdAt, l.at AS updatedAt
  FROM (${from}) l
  WHERE NOT EXISTS (SELECT 1 FROM runs r WHERE r.id = l.id) AND NOT EXISTS (SELECT 1 FROM progress p WHERE p.run_id = l.id)
    AND NOT EXISTS (SELECT 1 FROM claims c WHERE c.run_id = l.id) ${also})
  WHERE ${PAGE_FILTER} ORDER BY updatedAt DESC, id LIMIT @limit`;
const LONE_SINCE_SQL = LONE(`SELECT run_id AS id, max(committed_at) AS at FROM committed INDEXED BY committed_at
  WHERE committed_at BETWEEN @floor AND @upto GROUP BY run_id`,
'AND (@upto >= 1e308 OR NOT EXISTS (SELECT 1 FROM committed c WHERE c.run_id = l.id AND c.committed_at > @upto))');
const LONE_ALL_SQL = `WITH RECURSIVE ids(id) AS (
    SELECT (SELECT min(run_id) FROM committed)
    UNION ALL
    SELECT (SELECT min(run_id) FROM committed WHERE run_id > ids.id) FROM ids WHERE ids.id IS NOT NULL)
  ${LONE(`SELECT id, (SELECT max(committed_at) FROM committed c WHERE c.run_id = ids.id) AS at FROM ids
    WHERE id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM runs r WHERE r.id = ids.id)`)}`;

/**
 * Which execution of a run a call speaks for: the run's `attempts` when claimRun handed it out. A worker id
 * alone does not tell a stalled execution from its successor under the same id. Null: the caller's worker id
 * is the whole test, as before.
 */
const FENCE = '(@attempt IS NULL OR attempts = @attempt)';

export abstract class SqliteRunStore extends SqliteInsights implements RunStore {
  private readonly r;

  constructor(db: Database.Database, clock: Clock) {
    super(db, clock);
    this.r = {
      get: db.prepare<[string], RunRow>(`SELECT ${RUN_COLUMNS} FROM runs WHERE id = ?`),
      insert: db.prepare(`INSERT INTO runs (id, workflow, input_json, status, total_steps, created_at, updated_at)
        VALUES (@id, @workflow, @inputJson, 'queued', @totalSteps, @now, @now) ON CONFLICT (id) DO NOTHING`),
      runnable: db.prepare<{ now: number; workflows: string; holding: string; runId: string | null }, { id: string; owner: string | null }>(`
        SELECT id, owner FROM runs
        WHERE workflow IN (SELECT value FROM json_each(@workflows))
          AND id NOT IN (SELECT value FROM json_each(@holding)) AND (@runId IS NULL OR id = @runId)
          AND (status = 'queued' OR (status = 'running' AND (lease_expires_at <= @now
            OR owner IN (SELECT id FROM workers WHERE stopped_at IS NOT NULL))))
        ORDER BY created_at, id LIMIT 1`),
      take: db.prepare(`UPDATE runs SET status = 'running', owner = @workerId, lease_expires_at = @leaseExpiresAt,
        attempts = attempts + 1, started_at = coalesce(started_at, @now), updated_at = @now WHERE id = @id`),
      renew: db.prepare(`UPDATE runs SET lease_expires_at = @leaseExpiresAt
        WHERE id = @id AND owner = @workerId AND ${FENCE} AND status = 'running'`),
      finish: db.prepare(`UPDATE runs SET status = @status, error = @error, output_json = @outputJson, owner = NULL,
        lease_expires_at = NULL, finished_at = @now, updated_at = @now
        WHERE id = @id AND owner = @workerId AND ${FENCE} AND status IN ('running', 'paused')`),
      release: db.prepare(`UPDATE runs SET status = CASE status WHEN 'running' THEN 'queued' ELSE status END,
        owner = NULL, lease_expires_at = NULL, updated_at = @now WHERE id = @id AND owner = @workerId AND ${FENCE}`),
      act: db.prepare(`UPDATE runs SET status = @to, updated_at = @now,
        error = CASE WHEN @to = 'queued' THEN NULL ELSE error END,
        finished_at = CASE WHEN @to = 'cancelled' THEN @now WHEN @to = 'queued' THEN NULL ELSE finished_at END,
        -- A paused running run keeps its owner until that worker notices and lets go (renewRunLease tells it):
        -- its last step may still complete it. A cancelled one is abandoned: nothing its worker does can finish
        -- it, the worker learns of it from the status alone, and a dead worker would otherwise own it forever.
        owner = CASE WHEN status = 'running' AND @to <> 'cancelled' THEN owner ELSE NULL END,
        lease_expires_at = CASE WHEN status = 'running' AND @to <> 'cancelled' THEN lease_expires_at ELSE NULL END
        WHERE id = @id`),
      worker: db.prepare(`INSERT INTO workers (id, host, pid, machine, started_at, heartbeat_at)
        VALUES (@id, @host, @pid, @machine, @now, @now)
        ON CONFLICT (id) DO UPDATE SET host = excluded.host, pid = excluded.pid, machine = excluded.machine,
          started_at = excluded.started_at, heartbeat_at = excluded.heartbeat_at, stopped_at = NULL`),
      heartbeat: db.prepare('UPDATE workers SET heartbeat_at = ? WHERE id = ?'),
      stopWorker: db.prepare('UPDATE workers SET stopped_at = ? WHERE id = ? AND stopped_at IS NULL'),
      workerClaims: db.prepare<[string], { idemKey: string; runId: string; step: number | null }>(
        'SELECT idem_key AS idemKey, run_id AS runId, step FROM claims WHERE worker_id = ?'),
      deleteClaim: db.prepare('DELETE FROM claims WHERE idem_key = ? AND worker_id = ?'),
    };
  }

  async createRun(run: { id: string; workflow: string; inputJson: string; totalSteps: number | null }): Promise<RunRow> {
    const now = this.now();
    return this.tx(() => {
      if (this.r.insert.run({ ...run, now }).changes === 0) throw new ConflictError(`run ${run.id}`);
      return this.r.get.get(run.id)!;
    });
  }

  async getRun(id: string): Promise<RunRow | null> {
    return guard(() => this.r.get.get(id) ?? null);
  }

  async listRuns(filter: Parameters<RunStore['listRuns']>[0]): Promise<RunSummary[]> {
    const search = filter.search ? `%${filter.search.replace(/[\\%_]/g, (c) => `\\${c}`)}%` : null;
    const params = {
      ttl: filter.claimTtlMs / 1000, now: this.now(), status: filter.status ?? null, workflow: filter.workflow ?? null,
      search, owner: filter.owner ?? null, limit: filter.limit ?? 100,
      afterAt: filter.after?.updatedAt ?? null, afterId: filter.after?.id ?? null,
    };
    // One read transaction: the page and the commits it is compared with are one snapshot.
    return guard(() => this.db.transaction(() => {
      const page = this.prepared<unknown[], RunSummary>(PAGE_SQL).all(params);
      const lonely = (params.status === null || params.status === 'idle') && (params.workflow === null || params.workflow === 'external')
        && params.owner === null;
      if (!lonely) return page;
      const lone = page.length === params.limit
        ? this.prepared<unknown[], RunSummary>(LONE_SINCE_SQL).all({ ...params, floor: page[page.length - 1]!.updatedAt,
          upto: params.afterAt ?? Number.MAX_VALUE })
        : this.prepared<unknown[], RunSummary>(LONE_ALL_SQL).all(params);
      if (lone.length === 0) return page;
      return [...page, ...lone].sort((a, b) => b.updatedAt - a.updatedAt || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)).slice(0, params.limit);
    })());
  }

  async claimRun(request: Parameters<RunStore['claimRun']>[0]): Promise<RunRow | null> {
    const now = this.now();
    return this.tx(() => {
      const found = this.r.runnable.get({ now, workflows: JSON.stringify(request.workflows),
        holding: JSON.stringify(request.holding ?? []), runId: request.runId ?? null });
      if (!found) return null;
      this.r.take.run({ id: found.id, workerId: request.workerId, now, leaseExpiresAt: now + request.leaseMs / 1000 });
      if (found.owner && found.owner !== request.workerId) {
        this.event({ runId: found.id, outcome: 'expired', workerId: request.workerId,
          detail: `run lease of ${found.owner} passed or its worker died; resumed by ${request.workerId}` }, now);
      }
      return this.r.get.get(found.id)!;
    });
  }

  async renewRunLease(id: string, workerId: string, leaseMs: number, attempt?: number): Promise<{ held: boolean; status: RunStatus | null }> {
    const now = this.now();
    return guard(() => {
      if (this.r.renew.run({ id, workerId, attempt: attempt ?? null, leaseExpiresAt: now + leaseMs / 1000 }).changes === 1) {
        return { held: true, status: 'running' };
      }
      const row = this.r.get.get(id);
      return { held: false, status: row?.status ?? null };
    });
  }

  async finishRun(id: string, workerId: string, outcome: { status: 'completed' | 'failed'; error?: string; outputJson?: string }, attempt?: number): Promise<boolean> {
    const now = this.now();
    return guard(() => this.r.finish.run({ id, workerId, attempt: attempt ?? null, now, status: outcome.status, error: outcome.error ?? null,
      outputJson: outcome.outputJson ?? null }).changes === 1);
  }

  async releaseRun(id: string, workerId: string, attempt?: number): Promise<void> {
    const now = this.now();
    guard(() => this.r.release.run({ id, workerId, attempt: attempt ?? null, now }));
  }

  async actOnRun(id: string, action: RunAction, actor: string): Promise<RunRow> {
    const now = this.now();
    return this.tx(() => {
      const run = this.r.get.get(id);
      if (!run) throw new NotFoundError(`run ${id}`);
      const { from, to } = TRANSITIONS[action];
      if (!from.includes(run.status)) throw new InvalidTransitionError(id, action, run.status);
      this.r.act.run({ id, to, now });
      this.event({ runId: id, outcome: 'operator', detail: `${action} by ${actor}: ${run.status} → ${to}` }, now);
      return this.r.get.get(id)!;
    });
  }

  async registerWorker(worker: Parameters<RunStore['registerWorker']>[0]): Promise<void> {
    const now = this.now();
    guard(() => this.r.worker.run({ ...worker, machine: worker.machine ?? null, now }));
  }

  async heartbeatWorker(id: string): Promise<void> {
    guard(() => this.r.heartbeat.run(this.now(), id));
  }

  async stopWorker(id: string): Promise<void> {
    guard(() => this.r.stopWorker.run(this.now(), id));
  }

  async listWorkers(): Promise<WorkerRow[]> {
    return guard(() => this.prepared<[], WorkerRow>(`SELECT id, host, pid, machine, started_at AS startedAt,
      heartbeat_at AS heartbeatAt, stopped_at AS stoppedAt FROM workers ORDER BY started_at DESC`).all());
  }

  async publishWorkflows(workerId: string, workflows: WorkflowPublication[]): Promise<void> {
    const now = this.now();
    this.tx(() => publishSqlite(this.db, workerId, workflows, now));
  }

  async listPublishedWorkflows(options: { liveWithinMs: number }): Promise<PublishedWorkflow[]> {
    return guard(() => listPublishedSqlite(this.db, this.now() - options.liveWithinMs / 1000));
  }

  async setRunTotal(id: string, workerId: string, totalSteps: number): Promise<void> {
    guard(() => setTotalSqlite(this.db, id, workerId, totalSteps));
  }

  /** A SQLite file is shared on one machine, where a pid is the proof (lib/store/machine.ts): nothing to hold. */
  async holdLiveness(): Promise<{ release(): Promise<void> }> {
    return { release: async () => undefined };
  }

  async livenessOf(workerIds: string[]): Promise<Map<string, 'held' | 'free' | 'unknown'>> {
    return new Map(workerIds.map((id) => [id, 'unknown']));
  }

  async markWorkerDead(id: string, reason: string): Promise<number> {
    const now = this.now();
    return this.tx(() => {
      this.r.stopWorker.run(now, id);
      const held = this.r.workerClaims.all(id);
      for (const claim of held) {
        this.r.deleteClaim.run(claim.idemKey, id);
        this.event({ runId: claim.runId, idemKey: claim.idemKey, step: claim.step, outcome: 'expired', workerId: id,
          detail: `worker ${id} died (${reason}); claim released, the step runs again` }, now);
      }
      return held.length;
    });
  }
}
