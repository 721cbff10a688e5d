/**
 * The shapes the API answers with, as zod schemas: the OpenAPI document's response schemas are generated
 * from these (lib/api/openapi.ts), and test/api/openapi.test.ts holds real answers to the document, so a
 * view that grows a field the document does not name fails a test instead of drifting.
 */
import { z } from 'zod';
import { WAIT_KINDS } from '../store/contract';
import { RUN_ACTIONS, RUN_STATUSES } from './runs';

const time = z.number().describe('epoch seconds');
const int = z.number().int();
const json = z.unknown().describe('any JSON value');
/** Beside a JSON value left out (null) because it nests deeper than the API answers with: why. */
const truncated = z
  .string()
  .optional()
  .describe('present when the value is null because it nests too deep to answer with; the stored text is unchanged');

export const runStatusSchema = z.enum(RUN_STATUSES);

/** Why a run is not moving (lib/control/stalled.ts); null when nothing holds it up. */
export const stallSchema = z
  .discriminatedUnion('kind', [
    z
      .strictObject({ kind: z.literal('no-live-worker'), message: z.string(), workflow: z.string() })
      .describe('queued, and no live worker serves its workflow'),
    z
      .strictObject({
        kind: z.literal('owner-silent'),
        message: z.string(),
        owner: z.string(),
        silentSince: time.describe("the owner's last heartbeat"),
        takeoverAt: time.describe('when its run lease passes and another worker may take the run over'),
      })
      .describe('running, and its owner stopped heartbeating: not counted as running'),
  ])
  .nullable()
  .describe('why the run is not moving, or null; a stalled run is never counted as running');

/** What a queued run waits for (lib/control/queued.ts); null for any other run. */
const slotUse = z.strictObject({
  id: z.string(),
  slots: int.nullable().describe('its --concurrency; null: not recorded (an older worker)'),
  runs: z.array(z.string()).describe('the runs it is running, one slot each'),
});
export const queuedReasonSchema = z
  .discriminatedUnion('kind', [
    z.strictObject({ kind: z.literal('no-worker'), message: z.string() }).describe('no worker is alive'),
    z
      .strictObject({ kind: z.literal('not-served'), workflow: z.string(), message: z.string() })
      .describe('live workers, none serving its workflow'),
    z
      .strictObject({
        kind: z.enum(['slots-busy', 'slot-free']),
        workflow: z.string(),
        busy: int,
        slots: int,
        workers: z.array(slotUse),
        message: z.string(),
      })
      .describe("the serving workers' slots: all busy (each with its runs), or one free for the next poll"),
    z
      .strictObject({ kind: z.literal('unpublished'), workers: z.array(z.string()), message: z.string() })
      .describe('a live worker that published no workflows may take it'),
    z
      .strictObject({
        kind: z.literal('held'),
        workflow: z.string(),
        limit: z.enum(['concurrency', 'rate']),
        key: z.string().describe("the run's key under that limit ('' when its input has none)"),
        place: int
          .optional()
          .describe(
            'its place in line under its key, in the pick order (1: the next; 101: that or later): a rate limit, for a first start; a concurrency limit with places free, for one of them (absent when none is free)',
          ),
        nextSlotInS: z
          .number()
          .optional()
          .describe(
            'a rate limit: seconds until its own slot opens (exact up to the limit in places; past it, the earliest)',
          ),
        message: z.string(),
      })
      .describe(
        "its workflow's concurrency limit is full under its key, its rate limit has no slot yet, or the key's free places go to the runs ahead of it",
      ),
  ])
  .nullable()
  .describe('what a queued run waits for; null for a run that is not queued');

/** A run's figures, one definition each (lib/control/figures.ts). */
export const figuresSchema = z
  .strictObject({
    done: int.describe('steps done: the furthest of the saved map and the committed steps; total for a completed run'),
    total: int.nullable(),
    percent: int.nullable().describe('done ÷ total, rounded down; 100 for a completed run; null without a total'),
    committed: int.describe("the run's results that stand now"),
    executed: int.describe('of them, those executed in this execution (a rerun moves later steps to history)'),
    skipped: int,
    awaited: int,
  })
  .describe('progress, executed, committed… as every view shows them');

export const runSchema = z.strictObject({
  id: z.string(),
  workflow: z.string(),
  status: runStatusSchema,
  input: json,
  output: json,
  inputTruncated: truncated,
  outputTruncated: truncated,
  error: z.string().nullable(),
  totalSteps: int.nullable(),
  attempts: int,
  owner: z.string().nullable(),
  leaseExpiresAt: time.nullable(),
  createdAt: time,
  updatedAt: time,
  startedAt: time.nullable(),
  finishedAt: time.nullable(),
  external: z.boolean().describe("an outside client's run: no runs row, made from its progress and claims"),
  stall: stallSchema,
  queuedReason: queuedReasonSchema,
  forkedFromRun: z.string().nullable().describe('a fork: the run it was forked from'),
  forkedAtStep: int.nullable().describe('a fork: the step it was forked at (steps before it were copied)'),
  budgetUsd: z
    .number()
    .nullable()
    .describe('USD its model calls may spend through the gateway before the next is refused and the run paused'),
  parentRunId: z.string().nullable().describe('a child run (ctx.startChild): the run that started it'),
  detached: z.boolean().describe("a child run that outlives its parent's cancel"),
  priority: int.describe('higher is picked first'),
});

export const runSummarySchema = z.strictObject({
  id: z.string(),
  workflow: z.string(),
  status: runStatusSchema,
  step: int,
  totalSteps: int.nullable(),
  executed: int.describe("the run's committed rows executed in this execution (figures.executed)"),
  committed: int,
  skipped: int,
  awaited: int,
  figures: figuresSchema,
  orphanedClaims: int,
  owner: z.string().nullable(),
  error: z.string().nullable(),
  createdAt: time.nullable(),
  updatedAt: time,
  stall: stallSchema,
  queuedReason: queuedReasonSchema,
  tags: z.array(z.string()).describe("the run's tags, sorted"),
  metadata: z.record(z.string(), z.string()).describe("the run's metadata (key → value)"),
});

export const progressSchema = z.strictObject({
  runId: z.string(),
  step: int,
  state: json,
  stateTruncated: truncated,
  updatedAt: time,
  counters: z.strictObject({ executed: int, skipped: int, awaited: int }),
  saveMs: z.number().nullable(),
});

export const claimSchema = z.strictObject({
  key: z.string(),
  runId: z.string(),
  step: int.nullable(),
  attempt: int,
  workerId: z.string().nullable(),
  claimedAt: time,
  leaseExpiresAt: time.nullable(),
  heartbeatAt: time.nullable(),
  expiresAt: time,
  orphaned: z.boolean(),
  outsideClient: z.boolean(),
});

export const committedSchema = z.strictObject({
  key: z.string(),
  runId: z.string(),
  step: int.nullable(),
  result: json,
  resultTruncated: truncated,
  committedAt: time,
  fingerprint: z.string().nullable(),
  workerId: z.string().nullable(),
  durationMs: z.number().nullable(),
  source: z.enum(['executed', 'manual', 'forked']),
  forkedFrom: z.string().nullable().describe("a forked row: the key of the original run's row it was copied from"),
  input: json.describe(
    "what the step was given, when its caller recorded it (ctx.step options.input, runAgent's item); null otherwise",
  ),
  inputTruncated: truncated,
});

export const waitSchema = z.strictObject({
  runId: z.string(),
  name: z.string(),
  kind: z.enum(WAIT_KINDS),
  details: json.describe('what the approver is shown'),
  createdAt: time,
  dueAt: time.nullable().describe('when a sleep wakes or a timeout decides; null: no timeout'),
  onTimeout: z.string().nullable().describe("an approval's 'approve' or 'reject'; a signal's 'timeout'"),
  decidedAt: time.nullable(),
  decision: json.describe('{ approved } for an approval, { payload } for a signal, { timedOut: true } after a timeout'),
  decidedBy: z.string().nullable(),
  note: z.string().nullable(),
});
export const waitAnswerSchema = z.strictObject({ wait: waitSchema });

const cursor = z.string().nullable().describe('pass back as ?cursor= for the next page; null on the last');

export const runsPageSchema = z.strictObject({ runs: z.array(runSummarySchema), nextCursor: cursor });
/** A run with its tags and metadata: its detail, and a start's answer. */
const taggedRunSchema = runSchema.extend({
  tags: z.array(z.string()).describe("the run's tags, sorted; set at start or by ctx.setTags / ctx.addTags"),
  metadata: z
    .record(z.string(), z.string())
    .describe("the run's metadata (key → value); set at start or by ctx.setMetadata"),
});
export const runDetailSchema = z.strictObject({
  run: taggedRunSchema,
  progress: progressSchema.nullable(),
  counts: z.strictObject({ committed: int, claims: int, orphanedClaims: int }),
  figures: figuresSchema,
  claims: z.array(claimSchema).describe("the oldest of the run's claims; counts.claims has them all"),
  claimsNextCursor: cursor.describe(
    'pass as ?cursor= to /api/v1/claims?runId= for the claims after these; null when all are listed',
  ),
  actions: z.array(z.enum(RUN_ACTIONS as [string, ...string[]])),
  waits: z.array(waitSchema).describe("the run's durable waits, oldest first: approvals, signals, sleeps"),
});
export const runAnswerSchema = z.strictObject({ run: runSchema });

/** A start's answer: `existed` when the id was taken by this workflow and input already (200, nothing written). */
export const startAnswerSchema = z.strictObject({ run: taggedRunSchema, existed: z.boolean() });
export const committedPageSchema = z.strictObject({ committed: z.array(committedSchema), nextCursor: cursor });
export const claimsPageSchema = z.strictObject({ claims: z.array(claimSchema), nextCursor: cursor });
export const expiredSchema = z.strictObject({
  key: z.string(),
  runId: z.string().nullable(),
  expired: z.literal(true),
});
export const resolvedSchema = z.strictObject({ key: z.string(), runId: z.string(), resolved: z.literal(true) });
export const auditEntrySchema = z.strictObject({
  id: int.describe('ids only grow: newest first is highest first'),
  at: time,
  actor: z.string().describe('"alice (operator)", "operator token (api)", "cli:ann": who, as the way in names them'),
  role: z.enum(['viewer', 'operator', 'local']),
  action: z
    .string()
    .describe(
      'start, pause, resume, cancel, retry, rerun, fork, expire, resolve, sweep, prune, token, approve, reject or signal',
    ),
  target: z.string().describe('a run id, an idempotency key, or * for a sweep or prune of everything'),
  runId: z.string().nullable(),
  detail: z
    .string()
    .nullable()
    .describe('what the action notes, then "reason: …" when the operator gave one, joined by "; "'),
});
export const auditPageSchema = z.strictObject({
  entries: z.array(auditEntrySchema),
  next: int.nullable().describe('pass back as ?before= for the next page; null on the last'),
});
export const sweptSchema = z.strictObject({
  expired: int,
  keys: z.array(z.string()).describe('the keys expired, oldest claim first'),
  skipped: z
    .array(z.strictObject({ key: z.string(), why: z.enum(['missing', 'live']) }))
    .describe('orphaned when listed, but gone or renewed before their turn: left alone'),
});

export const claimAnswerSchema = z.discriminatedUnion('outcome', [
  z.strictObject({
    outcome: z.literal('claimed'),
    key: z.string(),
    token: z.string(),
    leaseExpiresAt: time,
    attempt: int,
    tookOver: z.boolean(),
  }),
  z.strictObject({
    outcome: z.literal('committed'),
    key: z.string(),
    result: json,
    resultTruncated: truncated,
    committedAt: time,
    source: z.enum(['executed', 'manual', 'forked']),
    step: int.nullable(),
  }),
  z.strictObject({ outcome: z.literal('held'), key: z.string(), leaseExpiresAt: time, retryAfterMs: int }),
]);
const runStatusAnswer = z
  .strictObject({ status: runStatusSchema })
  .nullable()
  .describe(
    "the run's status, read in the commit's transaction; null for a run that declared nothing. paused or cancelled: stop before the next step",
  );
export const commitAnswerSchema = z.strictObject({
  key: z.string(),
  committed: z.literal(true),
  next: claimAnswerSchema.nullable().optional(),
  run: runStatusAnswer,
});
export const renewAnswerSchema = z.strictObject({ key: z.string(), renewed: z.literal(true), leaseMs: int });
export const releaseAnswerSchema = z.strictObject({ key: z.string(), released: z.literal(true) });
export const streamAnswerSchema = z.strictObject({
  key: z.string(),
  streamed: z.literal(true),
  step: int,
  attempt: int,
  seq: int,
});
export const usageAnswerSchema = z.strictObject({
  key: z.string(),
  recorded: z.literal(true),
  usageKey: z.string(),
  step: int.nullable(),
  costUsd: z.number().nullable(),
});
export const savedSchema = z.strictObject({ runId: z.string(), step: int, saved: z.literal(true) });
export const beginAnswerSchema = z.strictObject({
  run: z.strictObject({
    id: z.string(),
    workflow: z.string(),
    totalSteps: int.nullable(),
    status: runStatusSchema,
    created: z.boolean(),
  }),
});
export const endAnswerSchema = z.strictObject({ run: z.strictObject({ id: z.string(), status: runStatusSchema }) });
export const bulkAnswerSchema = z.strictObject({
  matched: int.describe('runs the filter matched when the operation began'),
  done: int.describe('runs the action was applied to: one audit line each'),
  skipped: z
    .array(z.strictObject({ id: z.string(), reason: z.string() }))
    .describe(
      "matched runs the action does not apply to (their status, an outside client's run), or that moved meanwhile",
    ),
});
export const runTokenSchema = z.strictObject({
  token: z
    .string()
    .describe('send as Authorization: Bearer <token>; it may use the checkpoint protocol for this run only'),
  runId: z.string(),
  expiresAt: time,
});
export const runLogPageSchema = z.strictObject({
  runId: z.string(),
  lines: z.array(
    z.strictObject({
      seq: int.describe("the line's number in its run, from 1 without gaps; only the newest lines are kept"),
      at: time.describe('when the worker read the line from the program'),
      stream: z.enum(['stdout', 'stderr', 'worker']).describe("worker: the worker's note (started, stopping, exited)"),
      line: z.string().describe('one line, cut at 4000 characters with a marker saying how long it was'),
      workerId: z.string().nullable(),
      attempt: int.nullable().describe("the run's take whose program printed it"),
    }),
  ),
  next: int.describe('pass as ?after= for the lines after these (a follower polls with it)'),
  more: z.boolean().describe('more lines are stored after `next` already'),
});
export const healthSchema = z.strictObject({ ok: z.boolean(), store: z.enum(['up', 'down']) });

/** Every refusal: branch on code, never on message. Some carry more (limit, position, line, column). */
export const errorSchema = z.object({
  error: z.object({
    code: z.string(),
    message: z.string(),
    fields: z.record(z.string(), z.array(z.string())).optional().describe('each wrong field and what is wrong with it'),
  }),
});

export const attemptSchema = z.strictObject({
  n: int,
  outcome: z.enum(['failed', 'taken_over', 'lease_lost', 'committed', 'resolved', 'forked', 'in_flight']),
  attempt: int
    .nullable()
    .describe(
      "the attempt's number as claims count it (takeovers included); for a takeover, the holder's that lost its lease",
    ),
  maxAttempts: int.nullable().describe("a failed attempt: how many attempts its step's policy allows"),
  retryAt: time.nullable().describe('a failed attempt: when the next was due; null when none was to come'),
  takenOverBy: z
    .strictObject({ workerId: z.string().nullable(), attempt: int.nullable() })
    .nullable()
    .describe('a takeover: the worker, and its attempt, that took the lease over'),
  startedAt: time.nullable(),
  endedAt: time.nullable(),
  durationMs: z.number().nullable(),
  workerId: z.string().nullable(),
  error: z.string().nullable(),
  rerun: int.describe('0 before any rerun; k after the k-th rerun that covered this step'),
});
const eventSchema = z.strictObject({
  id: int,
  runId: z.string(),
  key: z.string().nullable(),
  step: int.nullable(),
  outcome: z.string(),
  count: int,
  durationMs: z.number().nullable(),
  workerId: z.string().nullable(),
  detail: z.string().nullable(),
  at: time,
  attempt: int.nullable().describe('the attempt the event is about (a takeover: the taker); null on older rows'),
  maxAttempts: int.nullable(),
  retryAt: time.nullable(),
  previousWorkerId: z.string().nullable().describe('a takeover: whose lease passed'),
  previousAttempt: int.nullable(),
});
export const stepSchema = z.strictObject({
  runId: z.string(),
  step: int,
  key: z.string().nullable(),
  workflow: z.string().nullable(),
  runStatus: runStatusSchema.nullable(),
  status: z.enum(['committed', 'in_flight', 'not_committed']),
  result: json,
  resultTruncated: truncated,
  committed: committedSchema.nullable(),
  priorProgress: z
    .strictObject({ step: int, state: json, stateTruncated: truncated })
    .nullable()
    .describe("the run's saved progress when this step committed: what a rerun or fork from it puts back"),
  attempts: z.array(attemptSchema),
  claim: claimSchema.nullable(),
  history: z
    .array(
      committedSchema.extend({
        supersededAt: time,
        supersededBy: z.string(),
        reason: z.string().nullable(),
        rerun: int,
        replacedBy: z
          .strictObject({
            rerun: int.nullable(),
            committedAt: time,
            supersededAt: time.nullable(),
            current: z.boolean(),
          })
          .nullable()
          .describe(
            "the result that replaced this one: a later rerun's (current false) or the committed one (current true)",
          ),
      }),
    )
    .describe('earlier results a rerun moved to history, oldest first'),
  events: z.array(eventSchema),
});
/** What a rewind did to the run's saved state (lib/store/shared/rewind.ts). */
const rewoundState = {
  fromStep: int.describe('the step it started from (a step name given is resolved to its number)'),
  state: z
    .enum(['restored', 'kept', 'none'])
    .describe(
      'restored: the saved state is what it was when fromStep was reached; kept: none was recorded there, the latest stays; none: the run saves no progress',
    ),
  stateStep: int.nullable().describe('restored: the step the map stood at then (fromStep, or earlier if it lagged)'),
};
/** What the steps a rewind redoes cost the last time they ran (lib/gateway/rewind-cost.ts). */
export const lastCostSchema = z
  .strictObject({
    fromStep: int.describe('the first step redone'),
    toStep: int.describe("the last step redone: the run's last step"),
    calls: int.describe("model calls of those steps' latest execution"),
    inputTokens: int.describe('input tokens, cached ones included'),
    outputTokens: int,
    cachedTokens: int.describe('the part of the input read from the cache'),
    tokens: int.describe('input plus output'),
    costUsd: z.number().describe('USD; unpriced calls add nothing'),
    unpriced: int.describe('calls of a model the price table does not price'),
    text: z.string().describe('the sentence: "steps 20–39 cost $0.42 and 61k tokens last time"'),
  })
  .describe("what the steps a rerun or fork redoes cost the last time they ran, read from the gateway's ledger");
/** A rerun's preview (lib/control/rewind.ts rerunPreview): its last cost, and the child runs it would let go. */
export const rerunPreviewSchema = z
  .strictObject({
    fromStep: int.describe('the step it would start from (a step name given is resolved to its number)'),
    lastCost: lastCostSchema,
    letGo: z.strictObject({
      count: int,
      children: z
        .array(
          z.strictObject({
            runId: z.string(),
            workflow: z.string(),
            status: runStatusSchema.describe('as it is now: each has ended, or the preview is refused'),
            step: z.string().describe('the step that started it (`child:<name>`), among those the rerun moves'),
          }),
        )
        .describe(
          "the children the steps it moves started that are still the run's own: detached, each step starts a new one",
        ),
      text: z.string().describe('the sentence: "lets go 1 child run: crawl-7:a (fetch, completed)"'),
    }),
  })
  .describe('what a rerun from a step would do, said before it is done: nothing is written');
export const rerunAnswerSchema = z.strictObject({
  run: runSchema,
  moved: int.describe('results moved to history'),
  rerun: int,
  ...rewoundState,
  lastCost: lastCostSchema,
});
export const forkAnswerSchema = z.strictObject({
  run: runSchema,
  copied: int.describe('results copied from the original'),
  ...rewoundState,
  lastCost: lastCostSchema,
});

/** The usage ledger's sums (lib/gateway/ledger.ts): complete model calls, retired ones included. */
const usageTotals = z.strictObject({
  calls: int.describe('complete model calls through the gateway'),
  inputTokens: int,
  outputTokens: int,
  cachedTokens: int.describe('input tokens served from the prompt cache (part of inputTokens)'),
  costUsd: z.number().describe('USD by the price table; unpriced calls add nothing'),
  unpriced: int.describe('calls of a model the price table does not price'),
});
export const runUsageSchema = usageTotals.extend({
  runId: z.string(),
  bySteps: z.array(
    z.strictObject({
      step: int.nullable().describe('the step the key names (<run>:step:<n>); null: another key, or none'),
      usage: usageTotals,
    }),
  ),
  byModel: z.array(z.strictObject({ model: z.string().nullable(), usage: usageTotals })),
});
export const workflowUsageSchema = usageTotals.extend({
  workflow: z.string(),
  byModel: z.array(z.strictObject({ model: z.string().nullable(), usage: usageTotals })),
});
