/**
 * SQLite tables. The first columns of progress, committed and claims are the reference article's, with
 * its names and types, so its own client keeps working against a Waybill store; every column we added is
 * nullable or defaulted so that client's INSERTs still succeed. Times are epoch seconds (REAL).
 * Mirrored in pg.ts under the same export names.
 */
import { sql } from 'drizzle-orm';
import { index, integer, primaryKey, real, sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core';

export const progress = sqliteTable(
  'progress',
  {
    runId: text('run_id').primaryKey(),
    step: integer('step').notNull(),
    stateJson: text('state_json').notNull(),
    updatedAt: real('updated_at').notNull(),
    // Counters ride with progress writes: a skipped step never costs a transaction of its own.
    executed: integer('executed').notNull().default(0),
    skipped: integer('skipped').notNull().default(0),
    awaited: integer('awaited').notNull().default(0),
    /** How long the last progress write took, as its writer measured it: the save cost in redo ÷ save. */
    saveMs: real('save_ms'),
    /**
     * The run's committed rows, kept by the database itself (triggers on committed and progress, migration
     * 0027 on SQLite, 0034 on PostgreSQL): the runs list's committed figure is a lookup, not a count of a
     * 100,000-step run's index range. Exact for every writer, the reference article's client among them; null
     * only where unknown, and then the reader counts (shared/run-counts.ts).
     */
    committedCount: integer('committed_count'),
  },
  (t) => [
    // Runs whose progress moved most recently, for the runs page's newest-first candidates.
    index('progress_updated').on(t.updatedAt),
  ],
);

export const committed = sqliteTable(
  'committed',
  {
    idemKey: text('idem_key').primaryKey(),
    runId: text('run_id').notNull(),
    resultJson: text('result_json').notNull(),
    committedAt: real('committed_at').notNull(),
    step: integer('step'),
    fingerprint: text('fingerprint'),
    workerId: text('worker_id'),
    durationMs: real('duration_ms'),
    source: text('source', { enum: ['executed', 'manual', 'forked'] })
      .notNull()
      .default('executed'),
    /** For a `forked` row: the key of the original run's row it was copied from (control/rewind.ts). */
    forkedFrom: text('forked_from'),
    /** What the step was given, when its caller recorded it (`ctx.step(name, fn, { input })`, runAgent's item), bounded. */
    inputJson: text('input_json'),
    /**
     * The run's progress (step and state) as it stood when this step committed, before the commit's own write:
     * the map as it was when the step was reached. A rerun or fork from this step puts it back (store/shared/rewind.ts).
     * Null where it was not recorded (a hand-made or older row, a state over PRIOR_STATE_MAX_CHARS).
     */
    priorStep: integer('prior_step'),
    priorStateJson: text('prior_state_json'),
  },
  (t) => [
    // A run's rows in the committed table's page order, (step, key) with keyless steps first (SQLite sorts NULL
    // lowest): a keyset page of a 100,000-step run reads its hundred rows from here instead of sorting the run,
    // and a step or a range of steps is a seek. One such index, not one per read: every index that leads with
    // the run keeps each run's rows in leaves of its own, so a group commit of many runs writes a page of it
    // per run (pg.ts keeps both: PostgreSQL's WAL logs the changes, not the pages they land on).
    //
    // Only settled rows: a run-keyed index costs a page per run per batch, so a step's new row goes first to
    // committed_fresh, which holds the last two thousand or so rows of all runs, by (run, step), in a few pages,
    // and moves here with the other fresh rows at the next settle (sqlite/committed-rows.ts). `fresh` is a column of the
    // layout, not of the row: migration 0030 adds it, no read returns it, and it is not declared here, so both
    // dialects keep one row type. Only the step protocol's commit sets it; any other insert lands here at once.
    index('committed_run_step').on(t.runId, t.step, t.idemKey).where(sql`fresh IS NULL`),
    index('committed_fresh').on(t.runId, t.step).where(sql`fresh IS NOT NULL`),
    // Steps committed in the last hour (the runs page's rate) without reading a million rows.
    index('committed_at').on(t.committedAt),
    // A run's rows not executed here (resolved by hand, forked): few, so the runs list's `executed` figure is its
    // committed count less these, without reading the source of each of a 100,000-step run's rows. Partial:
    // an executed step's commit, nearly every one, writes no entry.
    index('committed_not_executed').on(t.runId).where(sql`${t.source} <> 'executed'`),
  ],
);

/**
 * Committed results a rerun took out of `committed` (control/rewind.ts): every committed column as it was,
 * plus when, by whom, why and by which rerun of the run. Never deleted by a rerun; the step page reads it.
 */
export const committedHistory = sqliteTable(
  'committed_history',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    idemKey: text('idem_key').notNull(),
    runId: text('run_id').notNull(),
    resultJson: text('result_json').notNull(),
    committedAt: real('committed_at').notNull(),
    step: integer('step'),
    fingerprint: text('fingerprint'),
    workerId: text('worker_id'),
    durationMs: real('duration_ms'),
    source: text('source', { enum: ['executed', 'manual', 'forked'] }).notNull(),
    forkedFrom: text('forked_from'),
    /** What the step was given, when its caller recorded it (`ctx.step(name, fn, { input })`, runAgent's item), bounded. */
    inputJson: text('input_json'),
    /**
     * The run's progress (step and state) as it stood when this step committed, before the commit's own write:
     * the map as it was when the step was reached. A rerun or fork from this step puts it back (store/shared/rewind.ts).
     * Null where it was not recorded (a hand-made or older row, a state over PRIOR_STATE_MAX_CHARS).
     */
    priorStep: integer('prior_step'),
    priorStateJson: text('prior_state_json'),
    supersededAt: real('superseded_at').notNull(),
    supersededBy: text('superseded_by').notNull(),
    reason: text('reason'),
    /** 1 for the run's first rerun, 2 for its second…: which results one rerun replaced. */
    rerun: integer('rerun').notNull(),
  },
  (t) => [index('committed_history_run_step').on(t.runId, t.step, t.id)],
);

export const claims = sqliteTable(
  'claims',
  {
    idemKey: text('idem_key').primaryKey(),
    runId: text('run_id').notNull(),
    claimedAt: real('claimed_at').notNull(),
    token: text('token'),
    workerId: text('worker_id'),
    leaseExpiresAt: real('lease_expires_at'),
    heartbeatAt: real('heartbeat_at'),
    step: integer('step'),
    attempt: integer('attempt').notNull().default(1),
  },
  (t) => [index('claims_run').on(t.runId)],
);

export const runs = sqliteTable(
  'runs',
  {
    id: text('id').primaryKey(),
    workflow: text('workflow').notNull(),
    inputJson: text('input_json').notNull(),
    status: text('status', {
      enum: ['queued', 'running', 'paused', 'waiting', 'completed', 'failed', 'cancelled', 'rejected'],
    })
      .notNull()
      .default('queued'),
    totalSteps: integer('total_steps'),
    owner: text('owner'),
    leaseExpiresAt: real('lease_expires_at'),
    attempts: integer('attempts').notNull().default(0),
    error: text('error'),
    outputJson: text('output_json'),
    createdAt: real('created_at').notNull(),
    updatedAt: real('updated_at').notNull(),
    startedAt: real('started_at'),
    finishedAt: real('finished_at'),
    /** A fork's original run and the step it was forked from: each run page links to the other. */
    forkedFromRun: text('forked_from_run'),
    forkedAtStep: integer('forked_at_step'),
    /** USD a run's recorded model calls may spend before the gateway refuses the next (lib/gateway/budget.ts). */
    budgetUsd: real('budget_usd'),
    /**
     * A child run's parent (ctx.startChild): its end decides the parent's `child` wait, in the transaction that
     * ends it. Detached: the parent's cancel leaves it running.
     */
    parentRunId: text('parent_run_id'),
    detached: integer('detached', { mode: 'boolean' }).notNull().default(false),
    /** Higher is picked first (lib/domain/run-limits.ts); 0 unless the start or the workflow gave one. */
    priority: integer('priority').notNull().default(0),
    /**
     * The W3C trace context the run's spans continue (lib/tracing.ts): given at its start, or its first traced
     * execution's run span. Null: none given and never executed with tracing on.
     */
    traceparent: text('traceparent'),
    /**
     * The parent whose cancel took this run (its cascade, or the run's start after it): a retry of that parent
     * brings back the children whose column names it. Null for a run not cancelled, or cancelled otherwise; set
     * and cleared by the statement that moves the status, so the newest cancel decides. Data, not the event's
     * text: an operator's name is free text and could read as a cascade's line.
     */
    cancelledWith: text('cancelled_with'),
  },
  (t) => [
    index('runs_status_updated').on(t.status, t.updatedAt),
    // A workflow's runs newest first: the runs list's `workflow=` filter reads their top, not all of runs_updated.
    index('runs_workflow_updated').on(t.workflow, t.updatedAt),
    index('runs_created').on(t.createdAt),
    // The runs page's newest first: its candidates are read from the top of this and progress_updated.
    index('runs_updated').on(t.updatedAt),
    index('runs_parent').on(t.parentRunId).where(sql`parent_run_id IS NOT NULL`),
    // A run's forks, oldest first, for its run page (shared/step-reads.ts forksPlan): without it every view of a
    // run page read every runs row. Few runs are forks, so only theirs are in it.
    index('runs_forked').on(t.forkedFromRun, t.createdAt, t.id).where(sql`forked_from_run IS NOT NULL`),
    // The run pick (sqlite/runs.ts claimRun) in its own order, over the runs that can become runnable only:
    // finished runs, however many, are not in it. The pick repeats this WHERE word for word, which is how
    // SQLite decides a partial index applies.
    index('runs_runnable')
      .on(sql`${t.priority} DESC`, t.createdAt, t.id)
      .where(sql`status IN ('queued', 'running', 'waiting')`),
    // A rate limit's window: a workflow's runs started since a time (shared/run-limits-sql.ts).
    index('runs_started').on(t.workflow, t.startedAt).where(sql`started_at IS NOT NULL`),
  ],
);

export const stepEvents = sqliteTable(
  'step_events',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    runId: text('run_id').notNull(),
    idemKey: text('idem_key'),
    step: integer('step'),
    outcome: text('outcome', {
      enum: ['executed', 'skipped', 'awaited', 'failed', 'expired', 'resolved', 'lease_lost', 'operator', 'key_reuse'],
    }).notNull(),
    // Skips and awaits are folded into one event per progress write; count says how many it stands for.
    count: integer('count').notNull().default(1),
    durationMs: real('duration_ms'),
    workerId: text('worker_id'),
    detail: text('detail'),
    /**
     * The attempt the event is about, as data (the detail is only the message): the failed or refused attempt,
     * the taker's for a takeover, the released claim's for an expiry. Null where unknown (older rows, outside clients).
     */
    attempt: integer('attempt'),
    /** A failed attempt's policy: how many attempts it allows, and when the next is due (null: none will be). */
    maxAttempts: integer('max_attempts'),
    retryAt: real('retry_at'),
    /** A takeover (`expired` with a taker): whose lease passed, and on which attempt. */
    previousWorkerId: text('previous_worker_id'),
    previousAttempt: integer('previous_attempt'),
    at: real('at').notNull().default(sql`(unixepoch('subsec'))`),
  },
  (t) => [
    index('step_events_run').on(t.runId, t.id),
    // A run's events of one outcome, newest first (the run page's key-reuse warnings), without walking the rest.
    index('step_events_run_outcome').on(t.runId, t.outcome, t.id),
    index('step_events_key').on(t.idemKey),
    // One step's attempts (the step page) without walking a 100,000-step run's events.
    index('step_events_run_step').on(t.runId, t.step),
  ],
);

export const workers = sqliteTable('workers', {
  id: text('id').primaryKey(),
  host: text('host').notNull(),
  pid: integer('pid').notNull(),
  startedAt: real('started_at').notNull(),
  heartbeatAt: real('heartbeat_at').notNull(),
  stoppedAt: real('stopped_at'),
  /**
   * Which kernel and pid namespace the pid belongs to (boot id + pid namespace inode): a peer may judge this
   * worker dead by its pid only when both match, because two containers can share a hostname yet not see
   * each other's pids. Null for workers that registered before it existed: never judged by pid.
   */
  machine: text('machine'),
  /** The workflow names this worker serves, as a JSON array: the start form's "no live worker" comes from it. */
  workflowsJson: text('workflows_json'),
  /**
   * How many runs it executes at once (`waybill worker --concurrency`): a queued run's reason counts its busy
   * slots against these. Null for a worker that registered before it was recorded.
   */
  slots: integer('slots'),
});

/**
 * The workflows live workers serve, published by each worker as it starts (the last to start wins on a
 * name): the control plane validates starts and renders its start form from these, so it needs no code of
 * the user's. input_schema_json is the zod input schema as JSON Schema.
 */
export const workflows = sqliteTable('workflows', {
  name: text('name').primaryKey(),
  description: text('description'),
  inputSchemaJson: text('input_schema_json').notNull(),
  /** Steps a run has when the workflow declares a fixed count; null when it depends on the input. */
  totalSteps: integer('total_steps'),
  /** The code version string the user gave the workflow, if any. */
  version: text('version'),
  /** The event names it subscribes to (defineWorkflow's `on`), as a JSON array; null: none. */
  eventsJson: text('events_json'),
  /** Its concurrency limit, rate limit and default priority (lib/domain/run-limits.ts), as JSON; null: none. */
  limitsJson: text('limits_json'),
  publishedBy: text('published_by'),
  updatedAt: real('updated_at').notNull(),
});

/** Who did what from the control plane (dashboard or API): operators' actions, kept apart from step history. */
export const audit = sqliteTable(
  'audit',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    at: real('at').notNull(),
    /** The signed-in name, or the role for a bare token: "alice (operator)", "operator token (api)". */
    actor: text('actor').notNull(),
    role: text('role', { enum: ['viewer', 'operator', 'local'] }).notNull(),
    action: text('action').notNull(),
    /** What it acted on: a run id, an idempotency key, or "*" for a sweep. */
    target: text('target').notNull(),
    runId: text('run_id'),
    detail: text('detail'),
  },
  (t) => [index('audit_at').on(t.at), index('audit_run').on(t.runId)],
);

/**
 * The metrics scrape's running totals (sqlite/metrics.ts), one row per histogram-bounds signature, shared by
 * every dashboard process so they report one counter and keep it across restarts. Prune never touches it: the
 * totals must outlive the rows they counted. Marks are null until the first scrape reads the history.
 */
export const metricsTally = sqliteTable('metrics_tally', {
  /** The bucket bounds (ms) joined with commas: other bounds count into other buckets, so another row. */
  bounds: text('bounds').primaryKey(),
  /** rowid of the last `committed` row counted, and that row's key and commit time, to tell it is still there. */
  committedMark: real('committed_mark'),
  committedMarkKey: text('committed_mark_key'),
  committedMarkAt: real('committed_mark_at'),
  /** id of the last step_events row counted. */
  eventsMark: real('events_mark'),
  /** Steps by outcome, and the three step-duration histograms, as JSON. */
  stepsJson: text('steps_json').notNull(),
  durationsJson: text('durations_json').notNull(),
});

/**
 * A run's durable waits (lib/engine/waits.ts): an approval, a signal or a sleep, one row per (run, kind, name). A row
 * is created when the run reaches its wait, or earlier by a signal sent ahead (then already decided). Once
 * decided_at is set it never changes: the first decision is the one, on replay and for every later caller.
 */
export const waits = sqliteTable(
  'waits',
  {
    runId: text('run_id').notNull(),
    name: text('name').notNull(),
    kind: text('kind', { enum: ['approval', 'signal', 'sleep', 'child', 'event'] }).notNull(),
    /** What the approver is shown (an approval's details), as JSON. */
    detailsJson: text('details_json'),
    createdAt: real('created_at').notNull(),
    /** When the wait ends by itself: a sleep's wake time, or a timeout. Null: it waits for a decision alone. */
    dueAt: real('due_at'),
    /** What a timeout decides: an approval's 'approve' or 'reject'; a signal's 'timeout'. */
    onTimeout: text('on_timeout'),
    decidedAt: real('decided_at'),
    /** The decision as JSON: an approval's { approved }, a signal's { payload }, a timeout's { timedOut: true }. */
    decisionJson: text('decision_json'),
    decidedBy: text('decided_by'),
    note: text('note'),
  },
  (t) => [
    // The kind is in the key: a signal, an approval and a sleep of one name are three waits, so a signal sent
    // ahead never takes the place of an approval the run has not reached yet (and never decides it).
    primaryKey({ columns: [t.runId, t.kind, t.name] }),
    // The next wake-up a worker sleeps until (nextWakeIn): the first open wait by due time, one index
    // entry read. Partial: an approval decided before its timeout would otherwise sit in the way until then.
    index('waits_open_due').on(t.dueAt).where(sql`${t.decidedAt} IS NULL`),
    // The open waits an event decides (openEventWaits): by its name, never a scan of every wait.
    index('waits_open_event').on(t.name, t.createdAt).where(sql`${t.kind} = 'event' AND ${t.decidedAt} IS NULL`),
  ],
);

/**
 * What a command workflow's program printed, and the worker's notes on it (lib/engine/run-log.ts writes them in
 * batches): the run page, GET /api/v1/runs/{id}/logs and `waybill logs` read them from here, wherever the
 * worker ran. `seq` numbers a run's lines from 1 with no gaps, so keeping only the last K is one range delete
 * and a follower asks for the lines after the last seq it saw. Bounded: the line's length (lib/store/shared/log-lines.ts)
 * and the lines kept per run; the rest goes when the run is pruned.
 */
export const runLogs = sqliteTable(
  'run_logs',
  {
    runId: text('run_id').notNull(),
    seq: integer('seq').notNull(),
    /** When the worker read the line from the program, by the worker's clock (lines are written in batches). */
    at: real('at').notNull(),
    stream: text('stream', { enum: ['stdout', 'stderr', 'worker'] }).notNull(),
    line: text('line').notNull(),
    workerId: text('worker_id'),
    /** The run's take (runs.attempts) the worker was executing: which execution printed the line. */
    attempt: integer('attempt'),
  },
  (t) => [primaryKey({ columns: [t.runId, t.seq] })],
);

/**
 * Model calls made through the gateway (lib/gateway/): one row per call, the ledger's unit. A call sent with
 * an Idempotency-Key is served under it (`idemKey`, unique): the first asks the upstream while holding the
 * lease (`leaseToken`, `leaseExpiresAt`), and its answer — status, headers and the body, or for a stream its
 * chunks in model_call_chunks — is what every later request with that key and fingerprint is given. A rerun
 * retires the row (`idemKey` null, `retiredAt` set; `sentKey` keeps what the request said), so the rerun asks
 * the model again and the first answer stays as history.
 */
export const modelCalls = sqliteTable(
  'model_calls',
  {
    id: text('id').primaryKey(),
    idemKey: text('idem_key'),
    sentKey: text('sent_key'),
    runId: text('run_id'),
    step: integer('step'),
    api: text('api', {
      enum: ['openai.chat', 'openai.responses', 'openai.embeddings', 'anthropic.messages', 'recorded'],
    }).notNull(),
    model: text('model'),
    /** sha-256 of the request's route and canonical JSON body: the same key must come with the same request. */
    fingerprint: text('fingerprint').notNull(),
    state: text('state', { enum: ['pending', 'complete'] }).notNull(),
    framing: text('framing', { enum: ['json', 'sse'] }).notNull(),
    leaseToken: text('lease_token'),
    leaseExpiresAt: real('lease_expires_at'),
    status: integer('status'),
    headersJson: text('headers_json'),
    /** The answer of a call that was not streamed; a stream's is its chunks, in order. */
    body: text('body'),
    inputTokens: integer('input_tokens'),
    outputTokens: integer('output_tokens'),
    /** Input tokens the provider served from its prompt cache (part of inputTokens). */
    cachedTokens: integer('cached_tokens'),
    /** By the price table the gateway ran with; null for a model the table does not price. */
    costUsd: real('cost_usd'),
    startedAt: real('started_at').notNull(),
    completedAt: real('completed_at'),
    retiredAt: real('retired_at'),
  },
  (t) => [uniqueIndex('model_calls_key').on(t.idemKey), index('model_calls_run').on(t.runId, t.step)],
);

/** A streamed answer's chunks, as the upstream sent them: replayed in seq order, they are its bytes. */
export const modelCallChunks = sqliteTable(
  'model_call_chunks',
  {
    callId: text('call_id').notNull(),
    seq: integer('seq').notNull(),
    data: text('data').notNull(),
  },
  (t) => [primaryKey({ columns: [t.callId, t.seq] })],
);

/**
 * What a step streamed of its own (ctx.stream, the protocol's POST /checkpoint/stream): text chunks per
 * attempt, in seq order. An attempt's seq 0 replaces whatever that attempt number held (a rerun counts its
 * attempts from 1 again), and the step page shows the newest attempt's: a re-executed step never shows its
 * text twice.
 */
export const stepStreams = sqliteTable(
  'step_streams',
  {
    runId: text('run_id').notNull(),
    step: integer('step').notNull(),
    attempt: integer('attempt').notNull(),
    seq: integer('seq').notNull(),
    text: text('text').notNull(),
    at: real('at').notNull(),
  },
  (t) => [primaryKey({ columns: [t.runId, t.step, t.attempt, t.seq] })],
);

/**
 * Schedules: a workflow started on a cron expression in a time zone. A tick's run is named after the schedule
 * and the tick, so however many workers fire it, the tick has one run. `source`: `definition` (declared in a
 * workflow's code, upserted when its worker publishes) or `operator` (added at run time).
 */
export const schedules = sqliteTable(
  'schedules',
  {
    name: text('name').primaryKey(),
    workflow: text('workflow').notNull(),
    cron: text('cron').notNull(),
    timeZone: text('time_zone').notNull(),
    inputJson: text('input_json').notNull(),
    /** skip | queue | cancel: what a tick does while the schedule's previous run is still going. */
    overlap: text('overlap').notNull(),
    /** none | latest | all: what firing after downtime makes of the ticks missed; `all` fires at most the cap. */
    catchUp: text('catch_up').notNull(),
    catchUpCap: integer('catch_up_cap').notNull(),
    paused: integer('paused').notNull().default(0),
    source: text('source').notNull(),
    /** The next tick not yet fired (epoch seconds); the worker fires the schedule once it has come. */
    nextFireAt: real('next_fire_at').notNull(),
    lastTickAt: real('last_tick_at'),
    lastRunId: text('last_run_id'),
    createdAt: real('created_at').notNull(),
    updatedAt: real('updated_at').notNull(),
  },
  (t) => [index('schedules_due').on(t.nextFireAt).where(sql`${t.paused} = 0`)],
);

/**
 * Events sent to the control plane (POST /api/v1/events, `waybill emit`, the library's emit), kept under the
 * sender's id so a re-send changes nothing: each subscribed workflow starts one run per event id.
 */
export const events = sqliteTable(
  'events',
  {
    id: text('id').primaryKey(),
    name: text('name').notNull(),
    dataJson: text('data_json').notNull(),
    createdAt: real('created_at').notNull(),
  },
  (t) => [index('events_name').on(t.name, t.createdAt)],
);

/**
 * Alert webhooks: a URL subscribed to some events (a JSON array of their names), signed with its own secret.
 * `inDoubtSeconds`: how long a claim must have been in doubt before `claim.in_doubt` is sent for it.
 */
export const webhooks = sqliteTable('webhooks', {
  id: text('id').primaryKey(),
  url: text('url').notNull(),
  eventsJson: text('events_json').notNull(),
  secret: text('secret').notNull(),
  paused: integer('paused').notNull().default(0),
  inDoubtSeconds: integer('in_doubt_seconds').notNull().default(300),
  createdAt: real('created_at').notNull(),
  updatedAt: real('updated_at').notNull(),
});

/**
 * The webhooks' outbox: one row per event and subscription, written in the transaction of the change it tells
 * of, so an event is never lost nor sent for a change that did not commit. The id is the receiver's key to
 * deduplicate on, derived from the event (`<webhook>:<event>:<run>:<attempt>`), so a rescan or a retried write
 * inserts nothing twice. pending → delivered, or failed after the last attempt; a dispatcher holds a pending
 * row by its lease while it posts.
 */
export const webhookDeliveries = sqliteTable(
  'webhook_deliveries',
  {
    id: text('id').primaryKey(),
    webhookId: text('webhook_id').notNull(),
    event: text('event').notNull(),
    runId: text('run_id'),
    payloadJson: text('payload_json').notNull(),
    status: text('status').notNull(),
    attempts: integer('attempts').notNull().default(0),
    nextAttemptAt: real('next_attempt_at').notNull(),
    leaseOwner: text('lease_owner'),
    leaseExpiresAt: real('lease_expires_at'),
    lastStatus: integer('last_status'),
    lastError: text('last_error'),
    createdAt: real('created_at').notNull(),
    updatedAt: real('updated_at').notNull(),
    deliveredAt: real('delivered_at'),
  },
  (t) => [
    index('webhook_deliveries_due').on(t.nextAttemptAt).where(sql`${t.status} = 'pending'`),
    index('webhook_deliveries_webhook').on(t.webhookId, t.createdAt),
    index('webhook_deliveries_created').on(t.createdAt),
  ],
);

/**
 * A run's tags (a set of short strings) and metadata (key → value), set at its start or from inside it
 * (lib/domain/run-tags.ts says what they may be). Rows of their own rather than a JSON column, on both backends
 * alike: the key (run_id first) reads one run's, and the second index finds the runs that carry a tag, or a
 * key with a value, without reading any other run (the runs list's filters, sqlite/run-list.ts).
 */
export const runTags = sqliteTable(
  'run_tags',
  {
    runId: text('run_id').notNull(),
    tag: text('tag').notNull(),
  },
  (t) => [primaryKey({ columns: [t.runId, t.tag] }), index('run_tags_tag').on(t.tag, t.runId)],
);

export const runMetadata = sqliteTable(
  'run_metadata',
  {
    runId: text('run_id').notNull(),
    key: text('key').notNull(),
    value: text('value').notNull(),
  },
  (t) => [primaryKey({ columns: [t.runId, t.key] }), index('run_metadata_key_value').on(t.key, t.value, t.runId)],
);

/**
 * Runs with committed rows and neither a runs row nor a progress row (a library loop that calls runOnce and saves
 * no progress, an outside client that died before its first save), each with its latest commit: the runs list's
 * `idle` outside runs, read newest first from `lone_runs_at` instead of from every commit since the page's floor.
 * Kept by the database's triggers for every writer (migration 0031 on SQLite, 0038 on PostgreSQL).
 */
export const loneRuns = sqliteTable(
  'lone_runs',
  {
    runId: text('run_id').primaryKey(),
    at: real('at').notNull(),
  },
  (t) => [index('lone_runs_at').on(t.at, t.runId)],
);

/**
 * A run's earlier starts: the start a retry or a rerun cleared from `runs.started_at`, kept while a rate limit's
 * window may still count it (a day, the longest period), so a run started again within one period counts twice.
 * Written by the database's trigger for every writer (migration 0032), read beside runs_started by the pick.
 */
export const earlierStarts = sqliteTable(
  'earlier_starts',
  {
    runId: text('run_id').notNull(),
    workflow: text('workflow').notNull(),
    startedAt: real('started_at').notNull(),
  },
  (t) => [index('earlier_starts_workflow').on(t.workflow, t.startedAt)],
);
