/**
 * The shapes the API answers with, as zod schemas: the OpenAPI document's response schemas are generated
 * from these (lib/api/openapi.ts), and test/api/openapi.test.ts holds real answers to the document, so a
 * view that grows a field the document does not name fails a test instead of drifting.
 */
import { z } from 'zod';
import { RUN_ACTIONS, RUN_STATUSES } from './runs';

const time = z.number().describe('epoch seconds');
const int = z.number().int();
const json = z.unknown().describe('any JSON value');
/** Beside a JSON value left out (null) because it nests deeper than the API answers with: why. */
const truncated = z.string().optional().describe('present when the value is null because it nests too deep to answer with; the stored text is unchanged');

export const runStatusSchema = z.enum(RUN_STATUSES);

export const runSchema = z.strictObject({
  id: z.string(), workflow: z.string(), status: runStatusSchema, input: json, output: json,
  inputTruncated: truncated, outputTruncated: truncated, error: z.string().nullable(),
  totalSteps: int.nullable(), attempts: int, owner: z.string().nullable(), leaseExpiresAt: time.nullable(),
  createdAt: time, updatedAt: time, startedAt: time.nullable(), finishedAt: time.nullable(),
  external: z.boolean().describe('an outside client\'s run: no runs row, made from its progress and claims'),
});

export const runSummarySchema = z.strictObject({
  id: z.string(), workflow: z.string(), status: runStatusSchema, step: int, totalSteps: int.nullable(),
  executed: int, skipped: int, awaited: int, orphanedClaims: int, owner: z.string().nullable(), error: z.string().nullable(),
  createdAt: time.nullable(), updatedAt: time,
});

export const progressSchema = z.strictObject({
  runId: z.string(), step: int, state: json, stateTruncated: truncated, updatedAt: time,
  counters: z.strictObject({ executed: int, skipped: int, awaited: int }), saveMs: z.number().nullable(),
});

export const claimSchema = z.strictObject({
  key: z.string(), runId: z.string(), step: int.nullable(), attempt: int, workerId: z.string().nullable(),
  claimedAt: time, leaseExpiresAt: time.nullable(), heartbeatAt: time.nullable(), expiresAt: time,
  orphaned: z.boolean(), outsideClient: z.boolean(),
});

export const committedSchema = z.strictObject({
  key: z.string(), runId: z.string(), step: int.nullable(), result: json, resultTruncated: truncated, committedAt: time,
  fingerprint: z.string().nullable(), workerId: z.string().nullable(), durationMs: z.number().nullable(),
  source: z.enum(['executed', 'manual']),
});

export const waitSchema = z.strictObject({
  runId: z.string(), name: z.string(), kind: z.enum(['approval', 'signal', 'sleep']), details: json.describe('what the approver is shown'),
  createdAt: time, dueAt: time.nullable().describe('when a sleep wakes or a timeout decides; null: no timeout'),
  onTimeout: z.string().nullable().describe("an approval's 'approve' or 'reject'; a signal's 'timeout'"),
  decidedAt: time.nullable(), decision: json.describe('{ approved } for an approval, { payload } for a signal, { timedOut: true } after a timeout'),
  decidedBy: z.string().nullable(), note: z.string().nullable(),
});
export const waitAnswerSchema = z.strictObject({ wait: waitSchema });

const cursor = z.string().nullable().describe('pass back as ?cursor= for the next page; null on the last');

export const runsPageSchema = z.strictObject({ runs: z.array(runSummarySchema), nextCursor: cursor });
export const runDetailSchema = z.strictObject({
  run: runSchema, progress: progressSchema.nullable(),
  counts: z.strictObject({ committed: int, claims: int, orphanedClaims: int }),
  claims: z.array(claimSchema).describe('the oldest of the run\'s claims; counts.claims has them all'),
  claimsNextCursor: cursor.describe('pass as ?cursor= to /api/v1/claims?runId= for the claims after these; null when all are listed'),
  actions: z.array(z.enum(RUN_ACTIONS as [string, ...string[]])),
  waits: z.array(waitSchema).describe('the run\'s durable waits, oldest first: approvals, signals, sleeps'),
});
export const runAnswerSchema = z.strictObject({ run: runSchema });
export const committedPageSchema = z.strictObject({ committed: z.array(committedSchema), nextCursor: cursor });
export const claimsPageSchema = z.strictObject({ claims: z.array(claimSchema), nextCursor: cursor });
export const expiredSchema = z.strictObject({ key: z.string(), runId: z.string().nullable(), expired: z.literal(true) });
export const resolvedSchema = z.strictObject({ key: z.string(), runId: z.string(), resolved: z.literal(true) });
export const auditEntrySchema = z.strictObject({
  id: int.describe('ids only grow: newest first is highest first'), at: time,
  actor: z.string().describe('"alice (operator)", "operator token (api)", "cli:ann": who, as the way in names them'),
  role: z.enum(['viewer', 'operator', 'local']), action: z.string().describe('start, pause, resume, cancel, retry, expire, resolve, sweep, prune, token, approve, reject or signal'),
  target: z.string().describe('a run id, an idempotency key, or * for a sweep or prune of everything'), runId: z.string().nullable(),
  detail: z.string().nullable().describe('what the action notes, then "reason: …" when the operator gave one, joined by "; "'),
});
export const auditPageSchema = z.strictObject({
  entries: z.array(auditEntrySchema),
  next: int.nullable().describe('pass back as ?before= for the next page; null on the last'),
});
export const sweptSchema = z.strictObject({
  expired: int, keys: z.array(z.string()).describe('the keys expired, oldest claim first'),
  skipped: z.array(z.strictObject({ key: z.string(), why: z.enum(['missing', 'live']) }))
    .describe('orphaned when listed, but gone or renewed before their turn: left alone'),
});

export const claimAnswerSchema = z.discriminatedUnion('outcome', [
  z.strictObject({ outcome: z.literal('claimed'), key: z.string(), token: z.string(), leaseExpiresAt: time, attempt: int, tookOver: z.boolean() }),
  z.strictObject({ outcome: z.literal('committed'), key: z.string(), result: json, resultTruncated: truncated, committedAt: time, source: z.enum(['executed', 'manual']), step: int.nullable() }),
  z.strictObject({ outcome: z.literal('held'), key: z.string(), leaseExpiresAt: time, retryAfterMs: int }),
]);
const runStatusAnswer = z.strictObject({ status: runStatusSchema }).nullable()
  .describe('the run\'s status, read in the commit\'s transaction; null for a run that declared nothing. paused or cancelled: stop before the next step');
export const commitAnswerSchema = z.strictObject({
  key: z.string(), committed: z.literal(true), next: claimAnswerSchema.nullable().optional(), run: runStatusAnswer,
});
export const renewAnswerSchema = z.strictObject({ key: z.string(), renewed: z.literal(true), leaseMs: int });
export const releaseAnswerSchema = z.strictObject({ key: z.string(), released: z.literal(true) });
export const savedSchema = z.strictObject({ runId: z.string(), step: int, saved: z.literal(true) });
export const beginAnswerSchema = z.strictObject({
  run: z.strictObject({ id: z.string(), workflow: z.string(), totalSteps: int.nullable(), status: runStatusSchema, created: z.boolean() }),
});
export const endAnswerSchema = z.strictObject({ run: z.strictObject({ id: z.string(), status: runStatusSchema }) });
export const runTokenSchema = z.strictObject({
  token: z.string().describe('send as Authorization: Bearer <token>; it may use the checkpoint protocol for this run only'),
  runId: z.string(), expiresAt: time,
});
export const healthSchema = z.strictObject({ ok: z.boolean(), store: z.enum(['up', 'down']) });

/** Every refusal: branch on code, never on message. Some carry more (limit, position, line, column). */
export const errorSchema = z.object({
  error: z.object({
    code: z.string(), message: z.string(),
    fields: z.record(z.string(), z.array(z.string())).optional().describe('each wrong field and what is wrong with it'),
  }),
});
